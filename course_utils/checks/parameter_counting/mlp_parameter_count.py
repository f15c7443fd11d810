"""Exercise ``mlp_parameter_count(d_model, d_mlp, gated, bias)``: the parameters of one MLP, plain
(up and down) or gated (SwiGLU: up, gate and down), with their biases when ``bias``.

Required form (stated in the notebook): a whole number; each bias is as long as its layer's output.
"""

from __future__ import annotations

import random
from course_utils.counting import parameters as counting
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.parameter_counting._layers import layer_config, meta_numel


def mlp_parameter_count(d_model: int, d_mlp: int, gated: bool, bias: bool) -> int:
    """Reference: one MLP (up, down and, when gated, the gate projection) with biases."""
    return sum(
        counting.mlp_parameters(
            layer_config(d_model, 1, d_mlp=d_mlp, mlp="swiglu" if gated else "gelu", bias=bias)
        ).values()
    )


def _mlp_cases(seed: int) -> list[Case]:
    shapes = [(768, 3072, False, True), (4096, 14336, True, False), (512, 1365, True, True), (64, 100, False, False)]
    if seed:  # hidden cases: widths drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        shapes = [
            (32 * rng.randint(1, 64), 16 * rng.randint(1, 256), True, True),
            (8 * rng.randint(1, 64), 96 * rng.randint(1, 64), False, True),
            (16 * rng.randint(1, 64), 32 * rng.randint(1, 128), True, False),
            (8 * rng.randint(1, 128), 8 * rng.randint(1, 128), False, True),
        ]
    return [Case(f"d_model={d}, d_mlp={m}, gated={g}, bias={b}", (d, m, g, b)) for d, m, g, b in shapes]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "gate forgotten", "a gated MLP (SwiGLU) has a third matrix, the gate, the same shape as the up-projection"
)
def _mlp_no_gate(d_model, d_mlp, gated, bias):
    return 2 * d_model * d_mlp + ((d_mlp + d_model) if bias else 0)


@bank.mistake("down bias d_mlp wide", "the down-projection's bias has d_model entries (one per output), not d_mlp")
def _mlp_biases_both_wide(d_model, d_mlp, gated, bias):
    return (3 if gated else 2) * d_model * d_mlp + ((3 if gated else 2) * d_mlp if bias else 0)


@bank.mistake("d_mlp = 4 d_model", "use the d_mlp you are given: gated models rarely use 4 * d_model")
def _mlp_assumes_four(d_model, d_mlp, gated, bias):
    return mlp_parameter_count(d_model, 4 * d_model, gated, bias)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("matrices then biases")
def _mlp_matrices_then_biases(d_model, d_mlp, gated, bias):
    matrices = 3 if gated else 2
    biases = (matrices - 1) * d_mlp + d_model
    return matrices * d_model * d_mlp + bias * biases


@bank.alternative("nn.Linear on meta")
def _mlp_meta_linears(d_model, d_mlp, gated, bias):
    layers = [(d_model, d_mlp, bias), (d_mlp, d_model, bias)] + ([(d_model, d_mlp, bias)] if gated else [])
    return meta_numel(*layers)


@bank.alternative("per hidden unit, as float")
def _mlp_as_float(d_model, d_mlp, gated, bias):
    per_hidden_unit = (3.0 if gated else 2.0) * d_model + (2.0 if gated else 1.0) * bias
    return per_hidden_unit * d_mlp + float(bias) * d_model


MLP = Exercise(
    name="mlp_parameter_count",
    reference=mlp_parameter_count,
    cases=_mlp_cases,
    tolerance="exact",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "List the matrices: how many are there in a plain MLP, and how many in a gated one?",
        "Up and gate map d_model to d_mlp, down maps d_mlp back to d_model; "
        "each bias is as long as its layer's output.",
    ],
)
EXERCISES = {MLP.name: MLP}


def check_mlp_parameter_count(fn):
    """Check a student's ``mlp_parameter_count``."""
    return MLP.check(fn)
