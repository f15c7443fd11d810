"""Exercise ``merge_heads(z)``: the inverse of ``split_heads``.

Required form (stated in the notebook): z of shape (batch, n_heads, pos, d_head) becomes (batch, pos,
n_heads * d_head), the heads' outputs side by side, so that ``merge_heads(split_heads(x, h))`` is x.
Compared exactly.
"""

from __future__ import annotations

import torch

from course_utils.attention import multihead
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise

F64 = torch.float64


def merge_heads(z: torch.Tensor) -> torch.Tensor:
    """Reference: (batch, head, pos, d_head) -> (batch, pos, head * d_head)."""
    return multihead.merge_heads(z)


def _merge_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("z of shape (2, 3, 5, 4)", (torch.randn(2, 3, 5, 4, generator=gen, dtype=F64),)),
        Case("z of shape (1, 2, 4, 4)", (torch.randn(1, 2, 4, 4, generator=gen, dtype=F64),)),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "reshape without transpose",
    "a plain reshape mixes positions across heads: first transpose(1, 2) to (batch, pos, head, d_head), then reshape",
)
def _merge_by_reshape_only(z):
    batch, n_heads, pos, d_head = z.shape
    return z.reshape(batch, pos, n_heads * d_head)


@bank.mistake(
    "interleaved heads",
    "the heads' outputs go side by side (head 0's d_head numbers, then head 1's...), not interleaved",
)
def _merge_interleaved(z):
    batch, n_heads, pos, d_head = z.shape
    return z.permute(0, 2, 3, 1).reshape(batch, pos, n_heads * d_head)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("cat the heads")
def _merge_cat(z):
    return torch.cat(list(z.unbind(dim=1)), dim=-1)


@bank.alternative("permute then flatten")
def _merge_permute_flatten(z):
    return z.permute(0, 2, 1, 3).flatten(start_dim=2)


@bank.alternative("contiguous view")
def _merge_contiguous_view(z):
    return z.transpose(1, 2).contiguous().view(z.shape[0], z.shape[2], -1)


MERGE_HEADS = Exercise(
    name="merge_heads",
    reference=merge_heads,
    cases=_merge_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Undo split_heads step by step, in the opposite order.",
        "Swap the head and position axes back to (batch, pos, n_heads, d_head), then join the last two axes into one "
        "of width n_heads * d_head.",
    ],
    tolerance="exact",
)
EXERCISES = {MERGE_HEADS.name: MERGE_HEADS}


def check_merge_heads(fn):
    """Check a student's ``merge_heads(z)``."""
    return MERGE_HEADS.check(fn)
