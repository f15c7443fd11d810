"""Exercise ``alibi_bias(n_heads, n_pos)``: ALiBi's per-head slopes and causal distance bias (Press et al.).

Required form (stated in the notebook): a (n_heads, n_pos, n_pos) tensor, entry [h, i, j] = -m_h × (i - j) for a
key j at or before the query i and -inf for a future key; the slopes m_h follow the paper's rule (a geometric
sequence starting at 2^(-8/n) for a power of two n; otherwise the largest power of two below n, then every other
slope of twice that power). The reference is ``course_utils.positions.alibi_bias``.
"""

from __future__ import annotations

import math
import random

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.positions import alibi_bias as _alibi_reference


def alibi_bias(n_heads, n_pos):
    """Reference: -slope_h × (i - j) for j <= i, -inf for j > i, the paper's slopes."""
    return _alibi_reference(n_heads, n_pos)


def _alibi_cases(seed: int) -> list[Case]:
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        sizes = [(2 ** rng.randint(0, 4), rng.randint(2, 6)), (rng.choice([3, 5, 6, 7, 10, 12]), rng.randint(3, 9)),
                 (rng.choice([20, 24, 40, 48]), rng.randint(5, 12))]
        return [Case(f"n_heads = {h}, n_pos = {n}", (h, n)) for h, n in sizes]
    return [Case("n_heads = 8, n_pos = 4 (the paper's slopes 1/2, ..., 1/256)", (8, 4)),
            Case("n_heads = 12, n_pos = 5 (not a power of two)", (12, 5)), Case("n_heads = 1, n_pos = 3", (1, 3))]


def bias_from(slopes, n_pos, *, sign=-1.0, causal=True):
    """The bias for given slopes: ``sign`` × slope × distance back to the key, future keys -inf if ``causal``."""
    pos = torch.arange(n_pos)
    distance = (pos[:, None] - pos[None, :]).to(torch.float64)  # (q_pos, k_pos)
    bias = sign * slopes[:, None, None] * (distance if causal else distance.abs())
    return bias.masked_fill(distance < 0, -math.inf) if causal else bias


def geometric(n, first_power=1):
    """2^(-8 h / n) for h = first_power, first_power + 1, ...: the slopes of a power-of-two head count."""
    return 2.0 ** (-8 * torch.arange(first_power, first_power + n, dtype=torch.float64) / n)


def paper_slopes(n):
    closest = 2 ** math.floor(math.log2(n))
    return torch.cat([geometric(closest), geometric(2 * closest)[0::2][: n - closest]])


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "one geometric sequence for any head count",
    "for a head count that is not a power of two the paper does not use 2^(-8h/n): it takes the slopes of the "
    "largest power of two below n, then every other slope of twice that power",
)
def alibi_plain_geometric(n_heads, n_pos):
    return bias_from(geometric(n_heads), n_pos)


@bank.mistake(
    "slopes start at 1",
    "your first head has slope 1: the sequence starts at 2^(-8/n) (1/2 for 8 heads) and each next slope is that "
    "ratio times the previous one",
)
def alibi_slopes_from_one(n_heads, n_pos):
    closest = 2 ** math.floor(math.log2(n_heads))
    slopes = torch.cat([geometric(closest, 0), geometric(2 * closest, 0)[0::2][: n_heads - closest]])
    return bias_from(slopes, n_pos)


@bank.mistake(
    "distance rewarded",
    "your bias grows with distance: ALiBi PENALISES far keys, so the bias is minus the slope times the distance",
)
def alibi_positive(n_heads, n_pos):
    return bias_from(paper_slopes(n_heads), n_pos, sign=1.0)


@bank.mistake(
    "no causal mask",
    "future keys (j > i) must get -inf, so that no query attends to them; a distance penalty alone is not a mask",
)
def alibi_symmetric(n_heads, n_pos):
    return bias_from(paper_slopes(n_heads), n_pos, causal=False)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("the paper's recursive get_slopes, tril mask")
def alibi_recursive(n_heads, n_pos):
    def get_slopes(n):
        if math.log2(n).is_integer():
            start = 2 ** (-(2 ** -(math.log2(n) - 3)))
            return [start * start**i for i in range(n)]
        closest = 2 ** math.floor(math.log2(n))
        return get_slopes(closest) + get_slopes(2 * closest)[0::2][: n - closest]

    slopes = torch.tensor(get_slopes(n_heads))
    pos = torch.arange(n_pos)
    bias = -slopes[:, None, None] * (pos[:, None] - pos[None, :])
    allowed = torch.ones(n_pos, n_pos, dtype=torch.bool).tril()
    return torch.where(allowed, bias, torch.tensor(float("-inf")))


@bank.alternative("loops over heads and positions")
def alibi_loops(n_heads, n_pos):
    closest = 2 ** int(math.log2(n_heads))
    slopes = [2 ** (-8 * (h + 1) / closest) for h in range(closest)]
    slopes += [2 ** (-8 * (2 * h + 1) / (2 * closest)) for h in range(n_heads - closest)]
    bias = torch.full((n_heads, n_pos, n_pos), float("-inf"), dtype=torch.float64)
    for h, m in enumerate(slopes):
        for i in range(n_pos):
            for j in range(i + 1):
                bias[h, i, j] = -m * (i - j)
    return bias


@bank.alternative("float32, triu mask with masked_fill")
def alibi_float32(n_heads, n_pos):
    closest = 2 ** math.floor(math.log2(n_heads))
    ratio = 2.0 ** (-8.0 / closest)
    slopes = ratio ** torch.arange(1, closest + 1, dtype=torch.float32)
    extra = (ratio ** 0.5) ** (2 * torch.arange(n_heads - closest, dtype=torch.float32) + 1)
    slopes = torch.cat([slopes, extra])
    pos = torch.arange(n_pos, dtype=torch.float32)
    bias = slopes[:, None, None] * (pos[None, :] - pos[:, None])
    return bias.masked_fill(torch.ones(n_pos, n_pos, dtype=torch.bool).triu(1), float("-inf"))


def _future_keys_masked(case: Case, out) -> bool:
    """Every entry [h, i, j] with j > i is -inf (the property behind the mask; checked when no mistake matched)."""
    n_pos = case.args[1]
    out = torch.as_tensor(out)
    future = torch.ones(n_pos, n_pos, dtype=torch.bool).triu(1)
    return bool(torch.isneginf(out[..., future]).all())


ALIBI_BIAS = Exercise(
    name="alibi_bias",
    reference=alibi_bias,
    cases=_alibi_cases,
    properties=[Property(
        "future keys -inf",
        _future_keys_masked,
        "every entry [h, i, j] with a future key (j > i) must be -inf, in every head (the upper triangle of each "
        "head's (n_pos, n_pos) table); some of yours are finite",
    )],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two parts: one slope per head (a geometric sequence, with the paper's rule for head counts that are not a "
        "power of two), and one (n_pos, n_pos) table of how far back each key sits from each query.",
        "For n a power of two the slopes are r, r², ..., rⁿ with r = 2^(-8/n). Otherwise take those of the largest "
        "power of two c below n, then the 1st, 3rd, 5th, ... slopes of 2c until there are n. The bias is minus the "
        "slope times (i - j) where j <= i; set the entries with j > i to -inf. Broadcast slopes (n, 1, 1) against "
        "the distance table.",
    ],
)
EXERCISES = {ALIBI_BIAS.name: ALIBI_BIAS}


def check_alibi_bias(fn):
    """Check a student's ``alibi_bias(n_heads, n_pos)``."""
    return ALIBI_BIAS.check(fn)
