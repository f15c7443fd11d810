"""Exercise ``causal_mask(n_ctx)``: which keys each query may attend to, without seeing the future.

Required form (stated in the notebook): an (n_ctx, n_ctx) ``torch.bool`` tensor, rows queries and columns
keys, True where the query MAY attend (the key is at or before it, the diagonal included). Compared exactly.
"""

from __future__ import annotations

import random
import torch

from course_utils import masking
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise


def causal_mask(n_ctx: int) -> torch.Tensor:
    """Reference: (n_ctx, n_ctx) torch.bool, True where the key is at or before the query."""
    return masking.causal_mask(n_ctx)


def _mask_cases(seed: int) -> list[Case]:
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        first, last = rng.randint(2, 40), rng.randint(2, 40)
        return [Case(f"n_ctx={first}", (first,)), Case("n_ctx=1", (1,)), Case(f"n_ctx={last}", (last,))]
    return [Case("n_ctx=4", (4,)), Case("n_ctx=1", (1,)), Case("n_ctx=6 (YOUR CAT IS A LOVELY CAT)", (6,))]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "0/1 floats",
    "return a torch.bool mask (True = may attend), not 0/1 floats: ask for dtype=torch.bool when you build it",
)
def _float_mask(n):
    return torch.ones(n, n).tril()


@bank.mistake("diagonal excluded", "a token may attend to itself: keep the diagonal (tril(), not tril(-1))")
def _diagonal_excluded(n):
    return torch.ones(n, n, dtype=torch.bool).tril(-1)


@bank.mistake("inverted", "your mask is inverted (True marks the blocked future keys): here True means *may attend*")
def _inverted(n):
    return torch.ones(n, n, dtype=torch.bool).triu(1)


@bank.mistake(
    "upper triangle",
    "rows are queries and columns keys: query i may see keys 0..i, the lower triangle (tril), not the upper",
)
def _upper_triangle(n):
    return torch.ones(n, n, dtype=torch.bool).triu()


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("compare positions")
def _mask_by_comparison(n):
    pos = torch.arange(n)
    return pos[:, None] >= pos[None, :]  # (query, key): key at or before the query


@bank.alternative("not the strict upper triangle")
def _mask_not_strict_upper(n):
    return ~torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)


@bank.alternative("float tril turned to bool")
def _mask_float_tril_to_bool(n):
    return torch.tril(torch.ones(n, n)).bool()


@bank.alternative("Python loops")
def _mask_loops(n):
    return torch.tensor([[key <= query for key in range(n)] for query in range(n)], dtype=torch.bool).reshape(n, n)


CAUSAL_MASK = Exercise(
    name="causal_mask",
    reference=causal_mask,
    cases=_mask_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Row i is the query and column j the key. Which cells (i, j) may a token look at without seeing the future?",
        "Query i may see keys 0 to i, itself included: that is the lower triangle with its diagonal. Start from an "
        "n × n tensor of True values and keep only that triangle; torch has a function named after it.",
    ],
    tolerance="exact",
)
EXERCISES = {CAUSAL_MASK.name: CAUSAL_MASK}


def check_causal_mask(fn):
    """Check a student's ``causal_mask(n_ctx)``."""
    return CAUSAL_MASK.check(fn)
