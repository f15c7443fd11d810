"""Exercise ``layer_norm(x, w, b, eps=1e-5)``: normalise each vector over its last axis, then scale and shift.

Required form (stated in the notebook): ``x`` of shape (..., d_model), ``w`` and ``b`` of shape
(d_model,), the result shaped like ``x``; the variance divides by d_model, eps sits inside the square root.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import F64
from course_utils.checks.shared import keyed_uniform
from course_utils.layernorm import layer_norm as _layer_norm


def layer_norm(x, w, b, eps=1e-5):
    """Reference: (x - mean) / sqrt(var + eps) * w + b over the last axis, var dividing by d_model."""
    return _layer_norm(x, w, b, eps)


def _worked(seed: int) -> tuple:
    """[2, 4, 6, 8] with w = 1, b = 0; on hidden seeds scaled by 0.5-3, shifted by up to ±5, with w and b moved by up
    to ±0.2 (keyed by the grader's secret)."""
    x, w, b = torch.tensor([2.0, 4.0, 6.0, 8.0], dtype=F64), torch.ones(4, dtype=F64), torch.zeros(4, dtype=F64)
    if not seed:
        return x, w, b
    x = x * keyed_uniform(seed, 0.5, 3.0) + keyed_uniform(seed, -5, 5, stream=1)
    return x, w + keyed_uniform(seed, -0.2, 0.2, (4,), stream=2), b + keyed_uniform(seed, -0.2, 0.2, (4,), stream=3)


def _ln_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=F64)  # noqa: E731
    return [
        Case(
            "the worked example [2, 4, 6, 8], w = 1, b = 0",
            _worked(seed),
        ),
        Case(
            "a batch of 3 sequences of 5 positions, d_model 8, learned w and b", (rand(3, 5, 8), 1 + rand(8), rand(8))
        ),
        Case("tiny spread, eps = 1e-4 given (eps matters)", (1e-3 * rand(4, 6), 1 + rand(6), rand(6), 1e-4)),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "unbiased variance",
    "LayerNorm's variance divides by d_model (the mean of the squared deviations), not d_model - 1: "
    "torch.var does the latter unless told otherwise",
)
def ln_unbiased(x, w, b, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * w + b  # var divides by n - 1


@bank.mistake("no scale and shift", "after normalising, multiply by w and add b (the learned scale and shift)")
def ln_no_affine(x, w, b, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps)


@bank.mistake(
    "divided by the variance",
    "divide by the standard deviation (the square root of variance + eps), not the variance",
)
def ln_divide_by_variance(x, w, b, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return centred / (centred.pow(2).mean(-1, keepdim=True) + eps) * w + b


@bank.mistake(
    "statistics over the batch",
    "take the mean and variance over each vector's own d_model numbers (the last axis); across the batch is batch norm",
)
def ln_over_batch(x, w, b, eps=1e-5):
    centred = x - x.mean(0, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(0, keepdim=True) + eps) * w + b


@bank.mistake(
    "eps outside the square root",
    "eps goes inside the square root: sqrt(variance + eps); it matters when a vector's spread is tiny",
)
def ln_eps_outside(x, w, b, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return centred / (centred.pow(2).mean(-1, keepdim=True).sqrt() + eps) * w + b


@bank.mistake("eps ignored", "use the eps you are given (the check passes its own); don't write 1e-5 into the formula")
def ln_eps_hard_coded(x, w, b, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5) * w + b


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.layer_norm")
def _ln_functional(x, w, b, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], w, b, eps)


@bank.alternative("var(unbiased=False) and rsqrt")
def _ln_rsqrt(x, w, b, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + eps) * w + b


@bank.alternative("float32")
def _ln_float32(x, w, b, eps=1e-5):
    x = x.float()
    normed = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, correction=0, keepdim=True) + eps)
    return normed * w.float() + b.float()


@bank.alternative("E[x²] - E[x]²")
def _ln_moments(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt((x * x).mean(-1, keepdim=True) - mean**2 + eps) * w + b


LAYER_NORM = Exercise(
    name="layer_norm",
    reference=layer_norm,
    cases=_ln_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Work on the last axis only, keeping it (keepdim) so the statistics broadcast back over the vector. "
        "Centre first, then scale to unit spread, then apply the learned scale and shift.",
        "The variance is the mean of the squared centred values (divide by d_model, not d_model - 1); the spread is "
        "the square root of variance plus eps.",
    ],
)
EXERCISES = {LAYER_NORM.name: LAYER_NORM}


def check_layer_norm(fn):
    """Check a student's ``layer_norm(x, w, b, eps=1e-5)``."""
    return LAYER_NORM.check(fn)
