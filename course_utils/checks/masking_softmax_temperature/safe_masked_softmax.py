"""Exercise ``safe_masked_softmax(scores, mask)``: a softmax over the allowed keys that never returns NaN.

Required form (stated in the notebook): ``mask`` True where the query MAY attend; blocked keys get weight
exactly 0, the allowed ones share all of it, and a row with every key blocked comes back as all zeros.
"""

from __future__ import annotations

import torch

from course_utils import masking
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.checks.masking_softmax_temperature._shared import F64
from course_utils.checks.shared import no_nan, keyed_uniform
from course_utils.softmax import masked_softmax, softmax


def safe_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Reference: softmax over the allowed keys (mask True), zeros elsewhere, an all-zero row if none."""
    return masked_softmax(scores, mask)


def _masked_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    random_mask = torch.rand(2, 3, 5, generator=gen) > 0.5
    random_mask[0, 1] = False  # a query with nothing to attend to
    random_mask[1, 0] = True
    big = torch.tensor([[10_000.0, -10_000.0, 9_999.0], [3.0, 2.0, 1.0]], dtype=F64)
    if seed:  # hidden: each row moved by up to ±1,000, each score by up to ±0.5 (keyed by the grader's secret)
        moved = keyed_uniform(seed, -1000, 1000, (2, 1)) + keyed_uniform(seed, -0.5, 0.5, (2, 3), stream=1)
        big = big + (8 * moved).round() / 8  # eighths: exact in float32 at this size
    return [
        Case("4×4 scores, causal mask", (torch.randn(4, 4, generator=gen, dtype=F64), masking.causal_mask(4))),
        Case(
            "(2, 3, 5) scores, a random mask with one fully masked row",
            (torch.randn(2, 3, 5, generator=gen, dtype=F64), random_mask),
        ),
        Case("scores of ±10,000", (big, torch.tensor([[True, True, False], [True, False, True]]))),
        Case(
            "float32 (3, 4) scores, causal mask, the last query fully masked (its row must be zeros, not NaN)",
            (torch.randn(3, 4, generator=gen), masking.causal_mask(4)[:3] & torch.tensor([[True], [True], [False]])),
        ),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "softmax then zero",
    "you zeroed the masked weights after the softmax without renormalising: "
    "mask the scores to -inf *before* the softmax",
)
def _softmax_then_zero(s, m):
    return softmax(s) * m


@bank.mistake("fill with 0", "masked scores were set to 0, which still gets weight e^0: set them to -inf")
def _fill_with_zero(s, m):
    return softmax(s.masked_fill(~m, 0.0))


@bank.mistake("inverted", "your mask is inverted: True means the query *may* attend to that key")
def _inverted(s, m):
    return masked_softmax(s, ~m)


@bank.mistake(
    "NaN on empty rows",
    "a row with every key masked gives 0/0 = NaN: return zeros for such rows (e.g. torch.where on mask.any(-1))",
)
def _fill_inf_torch_softmax(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


@bank.mistake(
    "large negative instead of -inf, empty rows uniform",
    "filling blocked scores with a big negative number gives a fully masked row a uniform spread instead of "
    "zeros: such a row must come back as all zeros",
)
def masked_fill_large_negative(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.softmax, then NaN to 0")
def _softmax_then_nan_to_num(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1).nan_to_num(0.0)


@bank.alternative("float32")
def _float32(scores, mask):
    s = scores.float().masked_fill(~mask, float("-inf"))
    top = s.amax(dim=-1, keepdim=True).nan_to_num(0.0, neginf=0.0)
    e = (s - top).exp()
    total = e.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, e / total.clamp_min(1e-30), 0.0)


@bank.alternative("in place")
def _in_place(scores, mask):
    scores.masked_fill_(~mask, float("-inf"))  # works on the caller's tensor
    top = scores.amax(dim=-1, keepdim=True)
    top[torch.isinf(top)] = 0.0
    scores.sub_(top).exp_()
    total = scores.sum(dim=-1, keepdim=True)
    return scores.div_(total.where(total > 0, torch.ones_like(total)))


@bank.alternative("log-sum-exp")
def _logsumexp(scores, mask):
    filled = scores.masked_fill(~mask, float("-inf"))
    log_total = torch.logsumexp(filled, dim=-1, keepdim=True)
    return torch.where(mask, (filled - log_total).exp(), torch.zeros_like(scores))


@bank.alternative("big negative, then zero the empty rows")
def _big_negative_then_zero_empty_rows(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, -1e30), dim=-1) * mask.any(dim=-1, keepdim=True)


MASKED_SOFTMAX = Exercise(
    name="safe_masked_softmax",
    reference=safe_masked_softmax,
    cases=_masked_cases,
    properties=[Property("no NaN", no_nan, "your output contains NaN: a fully masked row must come back as zeros")],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Blocked keys must end with weight exactly 0 and the allowed ones must share all the weight. What score makes "
        "e^score zero? Then think about a row where every score is that value.",
        "Replace blocked scores by minus infinity, shift each row by its largest score (but use 0 as the shift "
        "where that largest score is minus infinity), exponentiate, and divide by the row total only where the total "
        "is positive; elsewhere return 0.",
    ],
)
EXERCISES = {MASKED_SOFTMAX.name: MASKED_SOFTMAX}


def check_safe_masked_softmax(fn):
    """Check a student's ``safe_masked_softmax(scores, mask)``."""
    return MASKED_SOFTMAX.check(fn)
