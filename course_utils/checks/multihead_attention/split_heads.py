"""Exercise ``split_heads(x, n_heads)``: cut a wide vector into heads.

Required form (stated in the notebook): x of shape (batch, pos, d_model) becomes (batch, n_heads, pos,
d_head), head h holding the contiguous columns h*d_head:(h+1)*d_head. Compared exactly.
"""

from __future__ import annotations

import torch

from course_utils.attention import multihead
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise

F64 = torch.float64


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Reference: (batch, pos, d_model) -> (batch, head, pos, d_head), head h = columns h*d_head:(h+1)*d_head."""
    return multihead.split_heads(x, n_heads)


def _split_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("x of shape (2, 5, 12), 3 heads", (torch.randn(2, 5, 12, generator=gen, dtype=F64), 3)),
        Case("x of shape (1, 4, 8), 2 heads", (torch.randn(1, 4, 8, generator=gen, dtype=F64), 2)),
        Case("x of shape (3, 6, 16), 4 heads", (torch.randn(3, 6, 16, generator=gen, dtype=F64), 4)),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "reshape straight to heads",
    "reshaping straight to (batch, head, pos, d_head) mixes positions into heads: "
    "reshape to (batch, pos, head, d_head), then transpose(1, 2)",
)
def _split_by_reshape_only(x, n_heads):
    batch, pos, d_model = x.shape
    return x.reshape(batch, n_heads, pos, d_model // n_heads)


@bank.mistake(
    "strided columns",
    "head h owns a contiguous block of columns h*d_head:(h+1)*d_head, "
    "not every n_heads-th column: reshape to (batch, pos, n_heads, d_head)",
)
def _split_strided(x, n_heads):
    batch, pos, d_model = x.shape
    return x.reshape(batch, pos, d_model // n_heads, n_heads).permute(0, 3, 1, 2)


@bank.mistake(
    "no transpose", "your result is (batch, pos, head, d_head): move the head axis before pos with transpose(1, 2)"
)
def _split_no_transpose(x, n_heads):
    batch, pos, d_model = x.shape
    return x.reshape(batch, pos, n_heads, d_model // n_heads)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("unflatten then transpose")
def _split_unflatten(x, n_heads):
    return x.unflatten(-1, (n_heads, -1)).transpose(1, 2)  # (batch, head, pos, d_head)


@bank.alternative("stack of column slices")
def _split_stack_slices(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return torch.stack([x[..., h * d_head : (h + 1) * d_head] for h in range(n_heads)], dim=1)


@bank.alternative("view then permute")
def _split_view_permute(x, n_heads):
    batch, pos, d_model = x.shape
    return x.contiguous().view(batch, pos, n_heads, d_model // n_heads).permute(0, 2, 1, 3)


SPLIT_HEADS = Exercise(
    name="split_heads",
    reference=split_heads,
    cases=_split_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two steps: first cut the last axis into (n_heads, d_head) without touching batch or pos, then move the head "
        "axis in front of the positions.",
        "A reshape that only splits the last axis into a heads axis and a d_head axis keeps each head's columns "
        "together; after it the head axis sits third, so swap it with the position axis.",
    ],
    tolerance="exact",
)
EXERCISES = {SPLIT_HEADS.name: SPLIT_HEADS}


def check_split_heads(fn):
    """Check a student's ``split_heads(x, n_heads)``."""
    return SPLIT_HEADS.check(fn)
