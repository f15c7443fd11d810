"""Exercise ``RMSNorm``: the student writes ``__init__`` and ``forward(x)`` of Llama's norm.

Required form (stated in the notebook): ``RMSNorm(d_model, eps=1e-5)`` with one parameter ``w`` of shape
(d_model,), ones at the start; ``forward(x)`` = x / sqrt(mean(x²) + eps) · w over the last axis, computed
in float32 when ``x`` is bfloat16 or float16 and cast back to ``x.dtype`` before the gain. The check
builds the module, moves it to the input's dtype, loads a seeded gain into ``w`` (except in the cases
about the fresh module) and compares with ``course_utils.llama.RMSNorm``, the output's dtype included,
to float32 rounding for float32/float64 inputs and to two roundings of the half type for half ones.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.checks.bank import Bank
from course_utils.checks.compare import describe_mismatch
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import keyed_uniform
from course_utils.checks.weights import convention_answer, convention_message
from course_utils.llama.norm import RMSNorm as _CourseRMSNorm
from course_utils.tolerances import teaching_tolerance

F64 = torch.float64
HALF_TOLERANCES = {torch.float16: (4e-3, 1e-4), torch.bfloat16: (2e-2, 1e-3)}  # two roundings of the type


class RMSNorm(_CourseRMSNorm):
    """Reference: the course's RMSNorm (float32 for half inputs, cast back before the gain)."""


def _worked(seed: int) -> torch.Tensor:
    """[3, 4] (RMS sqrt(12.5)); on hidden seeds scaled by 0.5-3 and moved by up to ±0.5 (keyed)."""
    x = torch.tensor([3.0, 4.0], dtype=F64)
    return x if not seed else x * keyed_uniform(seed, 0.5, 3.0) + keyed_uniform(seed, -0.5, 0.5, (2,), stream=1)


def _rms_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=F64)  # noqa: E731
    signs = torch.randint(0, 2, (2, 3, 16), generator=gen).double() * 2 - 1
    big = (signs * (300 + 300 * torch.rand(2, 3, 16, generator=gen, dtype=F64))).half()  # every square > 65,504
    return [
        Case("the worked example [3, 4], a fresh module (w starts at 1), eps = 0", (2, 0.0, _worked(seed), None)),
        Case("batch 2, 5 positions, d_model 8, a learned gain w", (8, None, rand(2, 5, 8), 1 + 0.5 * rand(8))),
        Case("a fresh module, 4 vectors of 6 tiny entries (about 1e-3): the default eps matters",
             (6, None, 1e-3 * rand(4, 6), None)),
        Case("eps = 0.01 given, entries about 0.1, learned w", (6, 0.01, 0.1 * rand(3, 6), 1 + 0.5 * rand(6))),
        Case("float16, entries of size 300-600 (their squares overflow float16's largest number)",
             (16, None, big, (1 + 0.5 * rand(16)).half())),
        Case("bfloat16, d_model 64, learned w (the output stays bfloat16)",
             (64, None, rand(3, 4, 64).bfloat16(), (1 + 0.5 * rand(64)).bfloat16())),
    ]


def _run(cls, case: Case):
    d_model, eps, x, w = case.args
    module = (cls(d_model) if eps is None else cls(d_model, eps=eps)).to(x.dtype)
    if w is not None:
        held = getattr(module, "w", None)
        if not isinstance(held, torch.Tensor) or tuple(held.shape) != (d_model,):
            return convention_answer(
                f"this exercise stores the gain as an nn.Parameter `w` of shape (d_model,) = ({d_model},), "
                f"and the check loads its values by that name; your module's `w` is {_described(held)}"
            )
        with torch.no_grad():
            held.copy_(w)
    with torch.no_grad():
        return module(x)


def _described(held) -> str:
    return f"of shape {tuple(held.shape)}" if isinstance(held, torch.Tensor) else f"a {type(held).__name__}"


def _compare(expected, got) -> str | None:
    message, wanted = convention_message(got), convention_message(expected)
    if message is not None or wanted is not None:
        return None if message == wanted else (message or "the module did not take the check's weights")
    if isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor) and got.dtype != expected.dtype:
        return f"expected an output of dtype {expected.dtype} (the input's), got {got.dtype}"
    return describe_mismatch(expected, got, tol=HALF_TOLERANCES.get(expected.dtype, teaching_tolerance("float32")))


class _Layout(nn.Module):
    """The parameters only (the mistakes and alternatives write their own forward)."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps, self.w = eps, nn.Parameter(torch.ones(d_model))


def _wide(x):
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("mean subtracted (LayerNorm)", "RMSNorm does not centre x: divide x itself by its root mean square")
class _Centred(_Layout):
    def forward(self, x):
        c = _wide(x) - _wide(x).mean(-1, keepdim=True)
        return (c * torch.rsqrt(c.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.w


@bank.mistake("no square root", "divide by the ROOT of mean(x²) + eps, not by the mean square itself")
class _NoRoot(_Layout):
    def forward(self, x):
        return (_wide(x) / (_wide(x).pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.w


@bank.mistake("normalised over the wrong axis", "take the mean of the squares over each vector's own d_model "
              "numbers, the last axis (keepdim=True so it broadcasts back)")
class _FirstAxis(_Layout):
    def forward(self, x):
        return (_wide(x) * torch.rsqrt(_wide(x).pow(2).mean(0, keepdim=True) + self.eps)).to(x.dtype) * self.w


@bank.mistake("gain not applied", "multiply the normalised x by the learned gain self.w")
class _NoGain(_Layout):
    def forward(self, x):
        return (_wide(x) * torch.rsqrt(_wide(x).pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


@bank.mistake("eps outside the square root", "eps goes inside the square root: sqrt(mean(x²) + eps)")
class _EpsOutside(_Layout):
    def forward(self, x):
        return (_wide(x) / (_wide(x).pow(2).mean(-1, keepdim=True).sqrt() + self.eps)).to(x.dtype) * self.w


@bank.mistake("eps ignored", "use the eps the module was given (store it in __init__), with 1e-5 as its default")
class _EpsHardCoded(_Layout):
    def forward(self, x):
        return (_wide(x) * torch.rsqrt(_wide(x).pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * self.w


@bank.mistake("no float32 upcast", "compute in float32 when x is float16 or bfloat16: in float16 the squares of "
              "entries above 256 overflow to inf, and the output collapses")
class _NoUpcast(_Layout):
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


@bank.mistake("not cast back", "cast the normalised x back to x.dtype before the gain: a float16 or bfloat16 "
              "input gives an output of the same dtype")
class _NotCastBack(_Layout):
    def forward(self, x):
        return _wide(x) * torch.rsqrt(_wide(x).pow(2).mean(-1, keepdim=True) + self.eps) * self.w


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("Meta's: always float32, type_as(x)")
class _Meta(_Layout):
    def forward(self, x):
        wide = x.float()
        return (wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.w


@bank.alternative("F.rms_norm in float32")
class _Functional(_Layout):
    def forward(self, x):
        return F.rms_norm(_wide(x), (x.shape[-1],), eps=self.eps).to(x.dtype) * self.w


@bank.alternative("vector norm / sqrt(d_model), gain and cast at the end")
class _VectorNorm(_Layout):
    def forward(self, x):
        wide = _wide(x).double()
        mean_square = torch.linalg.vector_norm(wide, dim=-1, keepdim=True) ** 2 / x.shape[-1]
        return (wide / torch.sqrt(mean_square + self.eps) * self.w.double()).to(x.dtype)


@bank.alternative("a gain named w registered as nn.Parameter(torch.ones(d_model)) and float32 via promote_types")
class _Promote(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_parameter("w", nn.Parameter(torch.ones(d_model)))

    def forward(self, x):
        wide = x.to(torch.promote_types(x.dtype, torch.float32))
        return (wide / wide.square().mean(-1, keepdim=True).add(self.eps).sqrt()).to(x.dtype) * self.w


RMS_NORM = Exercise(
    name="rms_norm",
    reference=RMSNorm,
    cases=_rms_cases,
    run=_run,
    compare=_compare,
    wants_class=True,
    function_name="RMSNorm",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "It is LayerNorm without the centring and without the bias: one statistic per vector (over the last "
        "axis), then the learned gain. For half-precision inputs, work on a float32 copy and return to the "
        "input's dtype before the gain.",
        "The statistic is the mean of the squares, kept as a (..., 1) column; add eps, take the reciprocal square "
        "root, multiply. Store eps in __init__ next to the gain, which starts as ones of length d_model.",
    ],
)
EXERCISES = {RMS_NORM.name: RMS_NORM}


def check_rms_norm(cls):
    """Check a student's ``RMSNorm`` class (its ``__init__(d_model, eps=1e-5)`` and ``forward(x)``)."""
    return RMS_NORM.check(cls)
