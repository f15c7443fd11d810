"""Exercise ``blockwise_attention(q, k, v, block_size)``: attention with an online softmax over blocks of keys.

Required form (stated in the notebook): return ``(out, lse)``: the attention output (..., q_pos, d_v), equal to
softmax(q kᵀ / sqrt(d_head)) v, and each query's log-sum-exp of its scaled scores (..., q_pos). Every case has a
number of keys that ``block_size`` does not divide, and one has scores in the thousands, where exp overflows
without a running maximum. The reference is ``course_utils.attention.blockwise.blockwise_attention``.
"""

from __future__ import annotations

import math

import torch

from course_utils.attention.blockwise import blockwise_attention as _blockwise_reference
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise


def blockwise_attention(q, k, v, block_size):
    """Reference: keys visited block_size at a time, running max, running sum and running output rescaled."""
    return _blockwise_reference(q, k, v, block_size)


def _blockwise_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)

    def make(*shape, dtype=torch.float64):
        return torch.randn(*shape, generator=gen, dtype=dtype)

    sharp = 30 * make(3, 4)  # scores in the thousands: exp(score) overflows without the running maximum
    return [
        Case("4 queries, 10 keys, d_head = 8, block_size = 4", (make(4, 8), make(10, 8), make(10, 3), 4)),
        Case("batch 2, 3 heads, 5 queries, 7 keys, d_head = 16, block_size = 3 (float32)",
             (make(2, 3, 5, 16, dtype=torch.float32), make(2, 3, 7, 16, dtype=torch.float32),
              make(2, 3, 7, 4, dtype=torch.float32), 3)),
        Case("3 queries, 9 keys with scores in the thousands, block_size = 2", (sharp, 30 * make(9, 4), make(9, 2), 2)),
    ]


def online(q, k, v, block_size, *, rescale=True, normalise=True, keep_max_in_lse=True, last_partial=True):
    """The online softmax with one step changed (each keyword names what a mistake forgets)."""
    scale = 1 / math.sqrt(q.shape[-1])
    m = torch.full((*q.shape[:-1], 1), -math.inf, dtype=q.dtype)
    total = torch.zeros(*q.shape[:-1], 1, dtype=q.dtype)
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    stop = k.shape[-2] if last_partial else k.shape[-2] - k.shape[-2] % block_size
    for start in range(0, stop, block_size):
        s = q @ k[..., start : start + block_size, :].transpose(-2, -1) * scale
        new_m = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        factor = torch.exp(m - new_m) if rescale else torch.ones_like(m)
        p = torch.exp(s - new_m)
        total = total * factor + p.sum(-1, keepdim=True)
        out, m = out * factor + p @ v[..., start : start + block_size, :], new_m
    lse = (m + total.log()) if keep_max_in_lse else total.log()
    return (out / total if normalise else out), lse.squeeze(-1)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "old sums not rescaled",
    "when a block raises a query's maximum, the sums built under the old maximum must be multiplied by "
    "exp(old max − new max) before the new block's terms are added, or they are counted at the wrong scale",
)
def blockwise_no_rescale(q, k, v, block_size):
    return online(q, k, v, block_size, rescale=False)


@bank.mistake(
    "never divided by the sum",
    "your output is the running weighted sum of values: divide it by the running sum of weights at the end",
)
def blockwise_unnormalised(q, k, v, block_size):
    return online(q, k, v, block_size, normalise=False)


@bank.mistake(
    "log-sum-exp without the maximum",
    "your output is right but lse is not: the running sum is relative to the running maximum, so "
    "lse = maximum + log(sum)",
)
def blockwise_lse_without_max(q, k, v, block_size):
    return online(q, k, v, block_size, keep_max_in_lse=False)


@bank.mistake(
    "last partial block dropped",
    "the keys after the last full block are missing: when block_size does not divide k_pos, the last block is "
    "shorter, and it still counts",
)
def blockwise_drops_remainder(q, k, v, block_size):
    return online(q, k, v, block_size, last_partial=False)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("running log-sum-exp with torch.logaddexp, blocks from torch.split")
def blockwise_logaddexp(q, k, v, block_size):
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for k_block, v_block in zip(k.split(block_size, dim=-2), v.split(block_size, dim=-2)):
        s = q @ k_block.mT / math.sqrt(q.shape[-1])
        new_lse = torch.logaddexp(lse, torch.logsumexp(s, dim=-1))
        out = out * torch.exp(lse - new_lse)[..., None] + torch.exp(s - new_lse[..., None]) @ v_block
        lse = new_lse
    return out, lse


@bank.alternative("output kept normalised at every step (FlashAttention-1 style)")
def blockwise_normalised_each_step(q, k, v, block_size):
    m = torch.full((*q.shape[:-1], 1), -math.inf, dtype=q.dtype)
    total = torch.zeros(*q.shape[:-1], 1, dtype=q.dtype)
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for start in range(0, k.shape[-2], block_size):
        s = torch.einsum("...qd,...kd->...qk", q, k[..., start : start + block_size, :]) / math.sqrt(q.shape[-1])
        new_m = torch.maximum(m, s.amax(-1, keepdim=True))
        p = (s - new_m).exp()
        new_total = total * (m - new_m).exp() + p.sum(-1, keepdim=True)
        out = (out * total * (m - new_m).exp() + p @ v[..., start : start + block_size, :]) / new_total
        m, total = new_m, new_total
    return out, (m + total.log())[..., 0]


@bank.alternative("float32 arithmetic, while loop")
def blockwise_float32(q, k, v, block_size):
    q32, k32, v32 = q.float() / q.shape[-1] ** 0.5, k.float(), v.float()
    m = torch.full(q.shape[:-1], float("-inf"))
    total = torch.zeros(q.shape[:-1])
    acc = torch.zeros(*q.shape[:-1], v.shape[-1])
    start = 0
    while start < k.shape[-2]:
        s = q32 @ k32[..., start : start + block_size, :].transpose(-1, -2)
        new_m = torch.max(m, s.max(dim=-1).values)
        p = torch.exp(s - new_m[..., None])
        total = total * torch.exp(m - new_m) + p.sum(dim=-1)
        acc = acc * torch.exp(m - new_m)[..., None] + p @ v32[..., start : start + block_size, :]
        m, start = new_m, start + block_size
    return acc / total[..., None], m + torch.log(total)


BLOCKWISE_ATTENTION = Exercise(
    name="blockwise_attention",
    reference=blockwise_attention,
    cases=_blockwise_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Keep three running quantities per query: the largest score seen so far, the sum of exp(score − that "
        "maximum), and the same weighted sum of value rows. Each block updates all three; the output is their "
        "ratio at the end.",
        "For each block: compute its scaled scores, take the new maximum (the old one or the block's, whichever is "
        "larger), multiply both running sums by exp(old − new), add the block's exp(score − new) terms (summed, "
        "and times the block's values). At the end divide, and lse = maximum + log(sum).",
    ],
)
EXERCISES = {BLOCKWISE_ATTENTION.name: BLOCKWISE_ATTENTION}


def check_blockwise_attention(fn):
    """Check a student's ``blockwise_attention(q, k, v, block_size)``."""
    return BLOCKWISE_ATTENTION.check(fn)
