"""Exercise ``gelu_tanh(x)``: the tanh-approximate GELU that GPT-2 uses, elementwise on a tensor of any shape.

Required form (stated in the notebook): 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))), not the exact erf
form; ``F.gelu(x, approximate="tanh")`` is accepted too.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from course_utils import mlp
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import keyed_uniform

F64 = torch.float64
_C = math.sqrt(2.0 / math.pi)


def _points(seed: int) -> torch.Tensor:
    """201 points from -6 to 6; on hidden seeds each end moved by up to ±0.5 (keyed by the grader's secret)."""
    if not seed:
        return torch.linspace(-6, 6, 201, dtype=F64)
    low, high = -6 + float(keyed_uniform(seed, -0.5, 0.5)), 6 + float(keyed_uniform(seed, -0.5, 0.5, stream=1))
    return torch.linspace(low, high, 201, dtype=F64)


def gelu_tanh(x):
    """Reference: 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))."""
    return mlp.gelu_tanh(x)


def _gelu_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("x = 201 evenly spaced points from about −6 to about 6", (_points(seed),)),
        Case("x of shape (3, 4, 5), standard normal × 2", (2 * torch.randn(3, 4, 5, generator=gen, dtype=F64),)),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("sqrt(pi/2)", "the constant inside tanh is sqrt(2/π) ≈ 0.798, not sqrt(π/2)")
def _gelu_wrong_constant(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(math.pi / 2) * (x + 0.044715 * x**3)))


@bank.mistake("no one half", "for large x GELU(x) ≈ x: the factor (1 + tanh) needs the 0.5 in front")
def _gelu_no_half(x):
    return x * (1 + torch.tanh(_C * (x + 0.044715 * x**3)))


@bank.mistake("x squared", "the correction term is 0.044715 · x cubed (odd, like tanh's argument should be)")
def _gelu_square(x):
    return 0.5 * x * (1 + torch.tanh(_C * (x + 0.044715 * x**2)))


@bank.mistake("exact GELU", "that is the exact GELU with erf: this exercise asks for the tanh approximation")
def _gelu_exact(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("sigmoid identity")
def _gelu_sigmoid(x):
    return x * torch.sigmoid(2 * _C * (x + 0.044715 * x.pow(3)))


@bank.alternative("F.gelu(approximate='tanh')")
def _gelu_builtin(x):
    return F.gelu(x, approximate="tanh")


@bank.alternative("NumPy float32")
def _gelu_numpy_f32(x):
    a = x.numpy().astype(np.float32)
    return torch.from_numpy(0.5 * a * (1 + np.tanh(np.float32(_C) * (a + np.float32(0.044715) * a * a * a))))


GELU_TANH = Exercise(
    name="gelu_tanh",
    reference=gelu_tanh,
    cases=_gelu_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "GELU is x times the chance that a standard normal is below x; the approximation replaces "
        "that normal CDF by a tanh curve.",
        "Inside the tanh: a constant sqrt(2/π) times (x plus a small multiple of x cubed). "
        "Outside: one half times x times (1 + tanh).",
    ],
)
EXERCISES = {GELU_TANH.name: GELU_TANH}


def check_gelu_tanh(fn):
    """Check a student's ``gelu_tanh``."""
    return GELU_TANH.check(fn)
