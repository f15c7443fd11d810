"""Exercise ``softmax_with_temperature(logits, temperature)``: softmax(logits / T) over the last dimension.

Required form (stated in the notebook): T = 0 is greedy, a one-hot row on the largest logit, the FIRST one
when several tie (as torch.argmax picks); for T > 0 no overflow even at T = 0.01. Sampling is checked
through the distribution a sampler would draw from, so the check is deterministic.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils import sampling
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.checks.masking_softmax_temperature._shared import F64
from course_utils.checks.shared import WORKED_LOGITS, no_nan, keyed_uniform
from course_utils.softmax import softmax


def softmax_with_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Reference: softmax(logits / T) over the last dim; T = 0 gives one-hot on the largest logit."""
    return sampling.next_token_distribution(logits, temperature)


def _moved(logits: torch.Tensor, seed: int, stream: int) -> torch.Tensor:
    """Hand-made logits; on hidden seeds each moved by up to ±0.4 (keyed by the grader's secret), which keeps
    their order (neighbours are at least 1 apart)."""
    return logits + keyed_uniform(seed, -0.4, 0.4, logits.shape, stream).to(logits.dtype) if seed else logits


def _tied(seed: int) -> torch.Tensor:
    """Rows whose largest logits tie; on hidden seeds the row is shifted and the tie placed by the key."""
    logits = torch.tensor([[2.0, 5.0, 5.0, 1.0], [7.0, 7.0, 7.0, 0.0]])
    if not seed:
        return logits
    order = keyed_uniform(seed, 0, 1, (2, 4), stream=3).argsort(-1)  # the same values, in a keyed order
    return logits.gather(-1, order) + keyed_uniform(seed, -50, 50, (2, 1), stream=4).float()


def _temperature_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("CAT/DOG/IS/LOVELY logits at T=0.5", (_moved(WORKED_LOGITS.clone(), seed, 0), 0.5)),
        Case("3 rows of 10 logits at T=2", (torch.randn(3, 10, generator=gen, dtype=F64), 2.0)),
        Case("CAT/DOG/IS/LOVELY logits at T=0.01", (_moved(WORKED_LOGITS.clone(), seed, 1), 0.01)),
        Case("T=0 (greedy)", (_moved(torch.tensor([[1.0, 3.0, 2.0], [4.0, 0.5, 1.0]]), seed, 2), 0.0)),
        Case(
            "T=0 with tied largest logits (the first one wins)",
            (_tied(seed), 0.0),
        ),
        Case(
            "rows about 0 and -500 at T=0.1 (shift each row by its own maximum)",
            (torch.randn(2, 5, generator=gen, dtype=F64) + torch.tensor([[0.0], [-500.0]], dtype=F64), 0.1),
        ),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("multiplies by T", "divide the logits by T (a small T must sharpen the distribution), don't multiply")
def _times_temperature(logits, t):
    return softmax(logits * t) if t > 0 else sampling.greedy_distribution(logits)


@bank.mistake(
    "no max shift",
    "exp(logits / T) overflows for small T (6.2 / 0.01 = 620): subtract the row maximum before exponentiating",
)
def _no_shift(logits, t):
    if t == 0:
        return sampling.greedy_distribution(logits)
    exps = (logits / t).exp()
    return exps / exps.sum(dim=-1, keepdim=True)


@bank.mistake(
    "divides by zero",
    "T = 0 cannot be divided by: handle it as its own case, a one-hot distribution on the largest logit (greedy)",
)
def _divides_by_zero(logits, t):
    return softmax(logits / t)


@bank.mistake(
    "one-hot on every tied maximum",
    "with tied largest logits the rule is: the one-hot goes to the FIRST of them "
    "(lowest index, as torch.argmax picks), "
    "and the row still sums to 1",
)
def greedy_all_ties(logits, t):
    if t == 0:
        return (logits == logits.amax(dim=-1, keepdim=True)).to(logits.dtype)
    return sampling.next_token_distribution(logits, t)


@bank.mistake(
    "ties split evenly",
    "at T = 0 the answer is one-hot, even with ties: put all the weight on the first of the tied largest logits",
)
def greedy_split_ties(logits, t):
    hot = greedy_all_ties(logits, t)
    return hot / hot.sum(dim=-1, keepdim=True) if t == 0 else hot


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.softmax, float32 one-hot")
def _torch_softmax_float_one_hot(logits, t):
    if t == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).float()  # float32 one-hot
    return torch.softmax(logits / t, dim=-1)  # torch's softmax shifts by the maximum itself


@bank.alternative("log_softmax, scattered one-hot")
def _log_softmax_scatter(logits, t):
    if t == 0:
        return torch.zeros_like(logits).scatter(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
    return (logits / t).log_softmax(dim=-1).exp()


@bank.alternative("float32, in place, eye rows")
def _float32_in_place(logits, t):
    x = logits.float().clone()
    if t == 0:
        return torch.eye(x.shape[-1])[x.argmax(dim=-1)]
    x -= x.amax(dim=-1, keepdim=True)
    x /= t
    x.exp_()
    return x / x.sum(dim=-1, keepdim=True)


TEMPERATURE = Exercise(
    name="softmax_with_temperature",
    reference=softmax_with_temperature,
    cases=_temperature_cases,
    properties=[
        Property("no NaN", no_nan, "your output contains NaN: subtract the maximum, and treat T = 0 as greedy")
    ],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two separate cases: T = 0, where the formula cannot be used, "
        "and T > 0, where it can but e^(z/T) may overflow.",
        "For T > 0, subtract each row's largest logit before dividing by T, so every exponent is at most 0. For T = 0, "
        "build a row of zeros with a single 1 at the position of the largest logit (the first one if several tie).",
    ],
)
EXERCISES = {TEMPERATURE.name: TEMPERATURE}


def check_softmax_with_temperature(fn):
    """Check a student's ``softmax_with_temperature(logits, temperature)``."""
    return TEMPERATURE.check(fn)
