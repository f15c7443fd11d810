"""Exercise ``toy_model_forward(x, W, b_final)``: Elhage et al.'s toy model of superposition, many instances at once.

Required form (stated in the notebook): x (batch, inst, feat), W (inst, hidden, feat), b_final (inst, feat);
return x' = ReLU(Wᵀ W x + b) of shape (batch, inst, feat), instances never mixing.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.superposition import toy_models
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise

F64 = torch.float64


def toy_model_forward(x, W, b_final):
    """Reference: ReLU(Wᵀ W x + b) per instance; x (batch, inst, feat), W (inst, hidden, feat)."""
    return toy_models.toy_model_forward(x, W, b_final)


def _toy_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for batch, inst, hidden, feat in ((8, 3, 2, 5), (4, 1, 3, 7), (6, 4, 5, 20)):
        x = torch.rand(batch, inst, feat, generator=gen, dtype=F64) * (
            torch.rand(batch, inst, feat, generator=gen) < 0.5
        )
        W = torch.randn(inst, hidden, feat, generator=gen, dtype=F64) / math.sqrt(hidden)
        b = torch.randn(inst, feat, generator=gen, dtype=F64) * 0.3
        cases.append(Case(f"batch {batch}, {inst} instances, {feat} features in {hidden} dimensions", (x, W, b)))
    return cases


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no ReLU", "the output goes through a ReLU: without it the model cannot filter out interference")
def _toy_no_relu(x, W, b):
    return torch.einsum("ihf,bih->bif", W, torch.einsum("ihf,bif->bih", W, x)) + b


@bank.mistake(
    "bias after the ReLU", "add b_final before the ReLU: the negative bias is what cuts off small interference"
)
def _toy_bias_after_relu(x, W, b):
    return torch.relu(torch.einsum("ihf,bih->bif", W, torch.einsum("ihf,bif->bih", W, x))) + b


@bank.mistake("no bias", "don't forget b_final (one per instance and feature)")
def _toy_no_bias(x, W, b):
    return torch.relu(torch.einsum("ihf,bih->bif", W, torch.einsum("ihf,bif->bih", W, x)))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("batched matmul")
def _toy_matmul(x, W, b):
    xt = x.transpose(0, 1)  # (inst, batch, feat)
    h = xt @ W.transpose(-1, -2)  # (inst, batch, hidden)
    return torch.relu(h @ W + b[:, None]).transpose(0, 1)


@bank.alternative("WᵀW first")
def _toy_gram(x, W, b):
    gram = W.transpose(-1, -2) @ W  # (inst, feat, feat): WᵀW
    return F.relu(torch.einsum("ifg,big->bif", gram, x) + b)


@bank.alternative("float32 loop over instances with F.linear")
def _toy_loop_f32(x, W, b):
    return torch.stack(
        [
            F.relu(F.linear(F.linear(x[:, i].float(), W[i].float()), W[i].T.float(), b[i].float()))
            for i in range(W.shape[0])
        ],
        dim=1,
    )


TOY_MODEL_FORWARD = Exercise(
    name="toy_model_forward",
    reference=toy_model_forward,
    cases=_toy_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Every instance is its own little model; an einsum with the instance letter on both sides keeps them apart.",
        "Down to the hidden space with W (sum over features), back up with W transposed (sum over hidden), "
        "add the bias, then ReLU.",
    ],
)
EXERCISES = {TOY_MODEL_FORWARD.name: TOY_MODEL_FORWARD}


def check_toy_model_forward(fn):
    """Check a student's ``toy_model_forward``."""
    return TOY_MODEL_FORWARD.check(fn)
