"""Exercise ``stable_softmax(x)``: the warm-up, a softmax over the last dimension that large logits cannot break.

Required form (stated in the notebook): the same shape as ``x``, each row (last dimension) summing to 1,
with no overflow for logits near ±10,000.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.checks.shared import rows_sum_to_one, keyed_uniform
from course_utils.softmax import softmax


def stable_softmax(x):
    """Reference for the warm-up: softmax over the last dimension, safe for large logits."""
    return softmax(x, dim=-1)


def _near_ten_thousand(seed: int) -> torch.Tensor:
    """Logits near ±10,000 a few units apart; on hidden seeds each row moved by up to ±1,000 and each logit by up
    to ±0.5 (in eighths), drawn from a generator the grader keys by its secret."""
    logits = torch.tensor([[10_000.0, 9_998.0, -10_000.0], [-10_000.0, -9_999.0, -10_000.5]], dtype=torch.float64)
    if seed:
        moved = keyed_uniform(seed, -1000, 1000, (2, 1)) + keyed_uniform(seed, -0.5, 0.5, (2, 3), stream=1)
        logits = logits + (8 * moved).round() / 8  # eighths: exact in float32 at this size, as the public case is
    return logits


def _cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("a single row of 5 logits", (torch.randn(5, generator=gen, dtype=torch.float64),)),
        Case("a batch of 3 rows of 7 logits", (torch.randn(3, 7, generator=gen, dtype=torch.float64),)),
        Case(
            "logits near ±10,000",
            (
                _near_ten_thousand(seed),
            ),
        ),
        Case("float32 logits in a (2, 2, 4) tensor", (4 * torch.randn(2, 2, 4, generator=gen),)),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "no max shift",
    "exp overflows for large logits (inf/inf = NaN): subtract each row's maximum before exponentiating",
)
def _no_max_shift(x):
    exps = x.exp()
    return exps / exps.sum(dim=-1, keepdim=True)


@bank.mistake(
    "sums over the whole tensor",
    "you normalised over the whole tensor: each row must sum to 1, so reduce over dim=-1 with keepdim=True",
)
def _sums_over_everything(x):
    shifted = x - x.max()
    return shifted.exp() / shifted.exp().sum()


@bank.mistake(
    "normalised over dim 0", "you normalised over the first dimension: softmax runs along the last one (dim=-1)"
)
def _normalised_over_first_dim(x):
    shifted = x - x.amax(dim=0, keepdim=True)
    return shifted.exp() / shifted.exp().sum(dim=0, keepdim=True)


@bank.mistake("divides by the max", "you divided by the largest exponential, not by the sum of the exponentials")
def _divides_by_max(x):
    return x.exp() / x.exp().amax(dim=-1, keepdim=True)


# -- accepted alternatives: correct, but written differently from the reference --------------------
@bank.alternative("computes in float32")
def _in_float32(x):
    """Computes in float32 whatever the input's dtype (and returns float32)."""
    x32 = x.float()
    shifted = x32 - x32.amax(dim=-1, keepdim=True)
    return shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)


@bank.alternative("in place")
def _in_place(x):
    """Overwrites its input: subtract, exponentiate and divide in place."""
    x -= x.max(dim=-1, keepdim=True).values
    x.exp_()
    x /= x.sum(dim=-1, keepdim=True)
    return x


@bank.alternative("logsumexp stabilisation")
def _log_sum_exp(x):
    """Another stabilisation: exp(x - logsumexp(x))."""
    return torch.exp(x - torch.logsumexp(x, dim=-1, keepdim=True))


@bank.alternative("torch.softmax")
def _torch_built_in(x):
    return torch.softmax(x, dim=-1)


@bank.alternative("2-D rows with max().values")
def _flattened_rows(x):
    """Works on a 2-D view of the rows, then restores the shape."""
    rows = x.reshape(-1, x.shape[-1])
    top = rows.max(dim=1).values.unsqueeze(1)
    exps = torch.exp(rows - top)
    return (exps / exps.sum(dim=1).unsqueeze(1)).reshape(x.shape)


STABLE_SOFTMAX = Exercise(
    name="stable_softmax",
    reference=stable_softmax,
    cases=_cases,
    properties=[
        Property(
            "rows sum to 1",
            rows_sum_to_one,
            "each row should sum to 1: normalise over the last dimension, keeping it so the division broadcasts",
        ),
    ],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Softmax gives the same answer if you subtract one number from every score of a row. Which "
        "number makes the largest exponent in the row exactly e^0 = 1?",
        "Reduce over the last dimension and keep that dimension (keepdim), so the row's maximum and "
        "later the row's sum broadcast back against every entry of the row; then divide the "
        "exponentials by their row sum.",
    ],
    tolerance="float32",
)
EXERCISES = {STABLE_SOFTMAX.name: STABLE_SOFTMAX}


def check_stable_softmax(fn):
    """Check a student's ``stable_softmax(x)``; prints one line: pass, or the likely mistake."""
    return STABLE_SOFTMAX.check(fn)
