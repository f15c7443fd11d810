"""Exercise ``mlp_with_residual(x, W_in, b_in, W_out, b_out)``: the position-wise MLP, added back to its input.

Required form (stated in the notebook): x (batch, pos, d_model), W_in (d_model, d_mlp), W_out (d_mlp, d_model),
row vectors times matrices; the result is the residual stream after the block, x + MLP(x), with the
tanh-approximate GELU as the nonlinearity.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils import mlp
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise

F64 = torch.float64


def mlp_with_residual(x, W_in, b_in, W_out, b_out):
    """Reference: x + gelu_tanh(x @ W_in + b_in) @ W_out + b_out, at every position."""
    return x + mlp.mlp_forward(x, W_in, b_in, W_out, b_out, "gelu_tanh")


def _mlp_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, shape, d_mlp in (
        ("batch 2, 5 positions, d_model 6, d_mlp 24", (2, 5, 6), 24),
        ("batch 1, 3 positions, d_model 4, d_mlp 10", (1, 3, 4), 10),
        ("one position, d_model 8, d_mlp 32", (1, 1, 8), 32),
    ):
        d_model = shape[-1]
        x = torch.randn(*shape, generator=gen, dtype=F64)
        W_in = torch.randn(d_model, d_mlp, generator=gen, dtype=F64) * (2.5 / math.sqrt(d_model))  # pre-acts ~2.5
        b_in = torch.randn(d_mlp, generator=gen, dtype=F64)
        W_out = torch.randn(d_mlp, d_model, generator=gen, dtype=F64) / math.sqrt(d_mlp)
        b_out = torch.randn(d_model, generator=gen, dtype=F64)
        cases.append(Case(label, (x, W_in, b_in, W_out, b_out)))
    return cases


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no residual", "the block adds the MLP's output back to its input: return x plus the MLP of x")
def _mlp_no_residual(x, W_in, b_in, W_out, b_out):
    return mlp.gelu_tanh(x @ W_in + b_in) @ W_out + b_out


@bank.mistake("exact GELU", "close, but this is the exact (erf) GELU; GPT-2's MLP uses the tanh approximation")
def _mlp_exact_gelu(x, W_in, b_in, W_out, b_out):
    return x + F.gelu(x @ W_in + b_in) @ W_out + b_out


@bank.mistake("ReLU", "ReLU is the textbook nonlinearity; this MLP uses the tanh-approximate GELU")
def _mlp_relu(x, W_in, b_in, W_out, b_out):
    return x + torch.relu(x @ W_in + b_in) @ W_out + b_out


@bank.mistake(
    "bias after the activation", "b_in belongs inside the nonlinearity: add it to x @ W_in before the activation"
)
def _mlp_bias_after_act(x, W_in, b_in, W_out, b_out):
    return x + (mlp.gelu_tanh(x @ W_in) + b_in) @ W_out + b_out


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("einsum")
def _mlp_einsum(x, W_in, b_in, W_out, b_out):
    hidden = F.gelu(torch.einsum("...d,dm->...m", x, W_in) + b_in, approximate="tanh")
    return x + torch.einsum("...m,md->...d", hidden, W_out) + b_out


@bank.alternative("F.linear with transposed weights")
def _mlp_linear(x, W_in, b_in, W_out, b_out):
    return x + F.linear(F.gelu(F.linear(x, W_in.T, b_in), approximate="tanh"), W_out.T, b_out)


@bank.alternative("float32, positions flattened, addmm")
def _mlp_float32_flat(x, W_in, b_in, W_out, b_out):
    flat = x.float().reshape(-1, x.shape[-1])  # (batch * pos, d_model)
    hidden = torch.addmm(b_in.float(), flat, W_in.float())
    out = torch.addmm(b_out.float(), F.gelu(hidden, approximate="tanh"), W_out.float())
    return (flat + out).reshape(x.shape)


MLP_WITH_RESIDUAL = Exercise(
    name="mlp_with_residual",
    reference=mlp_with_residual,
    cases=_mlp_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Four steps, each applied to every position on its own: project up, nonlinearity, project down, add back.",
        "The up-projection's bias is added before the activation; the output of the down-projection "
        "(plus b_out) is added to the original x.",
    ],
)
EXERCISES = {MLP_WITH_RESIDUAL.name: MLP_WITH_RESIDUAL}


def check_mlp_with_residual(fn):
    """Check a student's ``mlp_with_residual``."""
    return MLP_WITH_RESIDUAL.check(fn)
