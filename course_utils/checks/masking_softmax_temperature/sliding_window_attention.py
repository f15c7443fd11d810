"""Exercise ``sliding_window_attention(q, k, v, window)``: causal attention over the last ``window`` keys,
computing only the band of the score table.

Required form (stated in the notebook): q, k, v (..., pos, d_head) of the same positions; query i attends to
keys i - window + 1 .. i (fewer at the start); output (..., pos, d_head); the scores of the blocked cells
outside the band are never computed: queries go in blocks of ``window``, each scored against the keys its
block may see. Reference: the course's ``attention_scaling.sliding_window_attention``, tested against the
full table with ``sliding_window_mask``. The check also counts the call's matrix-multiply FLOPs with
``MatmulFlops``, a small dispatch mode that counts matrix products as
``torch.utils.flop_counter.FlopCounterMode`` does (tested to agree) at a fraction of its cost per operation,
and also PyTorch's fused CPU attention kernel, which FlopCounterMode leaves at 0. It
accepts at most the blocked approach's 8·⌈pos/window⌉·window²·d_head per row of leading axes, which the full
pos × pos table exceeds on every case with window < pos / 2.
"""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from course_utils import masking
from course_utils.attention import scaling as attention_scaling
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.masking_softmax_temperature._shared import F64


def sliding_window_attention(q, k, v, window):
    """Reference: the course's band-only ``attention_scaling.sliding_window_attention``."""
    return attention_scaling.sliding_window_attention(q, k, v, window)


def _qkv(gen, *shape):
    return tuple(torch.randn(*shape, generator=gen, dtype=F64) for _ in range(3))


def _window_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    pos, window = (rng.randint(13, 18), rng.randint(3, 5)) if seed else (14, 4)
    return [
        Case(f"one head, {pos} positions, window {window}", (*_qkv(gen, 1, pos, 8), window)),
        Case("batch 2, 3 heads, 18 positions, window 6", (*_qkv(gen, 2, 3, 18, 4), 6)),
        Case("window 1: each query sees only itself", (*_qkv(gen, 2, 5, 4), 1)),
        Case("window 12 >= 10 positions: plain causal attention", (*_qkv(gen, 10, 4), 12)),
    ]


aten = torch.ops.aten
_PRODUCTS = {aten.mm: 0, aten.bmm: 0, aten.addmm: 1, aten.baddbmm: 1}  # where the left factor sits in args
_FUSED = (aten._scaled_dot_product_flash_attention_for_cpu, aten._scaled_dot_product_efficient_attention,
          aten._scaled_dot_product_flash_attention)


class MatmulFlops(TorchDispatchMode):
    """Counts 2 FLOPs per multiply-add of every matrix product (einsum and @ reach mm/bmm here) and of
    PyTorch's fused attention kernels (scores and mixing): ``with MatmulFlops() as c: ...; c.flops``."""

    def __init__(self):
        super().__init__()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        packet = func._overloadpacket
        if packet in _PRODUCTS:
            left, right = args[_PRODUCTS[packet]], args[_PRODUCTS[packet] + 1]
            self.flops += 2 * left.numel() * right.shape[-1]
        elif packet in _FUSED:
            q, k, v = args[:3]
            self.flops += 2 * q.numel() * k.shape[-2] + 2 * q[..., 0].numel() * k.shape[-2] * v.shape[-1]
        return func(*args, **(kwargs or {}))


def _band_flops(q, window) -> int:
    """The blocked approach's matmul FLOPs: ⌈pos/w⌉ blocks of w queries, 2w keys, scores and mixing."""
    rows = q[..., 0, 0].numel()
    return 8 * math.ceil(q.shape[-2] / window) * window**2 * q.shape[-1] * rows


def _run_counted(impl, case: Case):
    """The output, and whether the call's matmul FLOPs stayed within the band's."""
    q, k, v, window = case.args
    with MatmulFlops() as counter:
        out = impl(q, k, v, window)
    return {"output": out, "band only": counter.flops <= _band_flops(q, window)}


def _positions(start, stop, first, device):
    return torch.arange(start, stop, device=device)[:, None], torch.arange(first, stop, device=device)[None, :]


def _blocks(q, k, v, window, *, reach=None, causal=True, scale=True, extra=0):
    """A written-out blocked version with knobs for the mistakes."""
    pos, out = q.shape[-2], torch.empty_like(v)
    for start in range(0, pos, window):
        stop = min(start + window, pos)
        first = max(start - (window - 1 if reach is None else reach), 0)
        scores = q[..., start:stop, :] @ k[..., first:stop, :].transpose(-2, -1)
        scores = scores / math.sqrt(q.shape[-1]) if scale else scores
        query_pos, key_pos = _positions(start, stop, first, q.device)
        allowed = query_pos - key_pos < window + extra
        allowed = allowed & (key_pos <= query_pos) if causal else allowed
        out[..., start:stop, :] = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1) @ v[..., first:stop, :]
    return out


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "the whole table",
    "you scored every query against every key and masked afterwards: compute only the band (queries in blocks "
    "of window, each against the keys its block may see), so the work grows as pos · window, not pos²",
)
def _whole_table(q, k, v, window):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    allowed = masking.sliding_window_mask(q.shape[-2], window)
    return scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1) @ v


@bank.mistake(
    "window one too wide",
    "query i sees window keys in all, itself included: keys i - window + 1 to i (distance < window, not <= window)",
)
def _one_too_wide(q, k, v, window):
    return _blocks(q, k, v, window, reach=window, extra=1)


@bank.mistake(
    "only the query's own block",
    "the first queries of a block also see keys from the block before it: start each block's keys window - 1 "
    "positions before the block",
)
def _own_block(q, k, v, window):
    return _blocks(q, k, v, window, reach=0)


@bank.mistake(
    "future keys inside the block",
    "the window is causal too: within a block, a query may not see the keys after it (key <= query)",
)
def _not_causal(q, k, v, window):
    return _blocks(q, k, v, window, causal=False)


@bank.mistake("no 1/sqrt(d_head)", "scale the scores by 1/sqrt(d_head) before the softmax")
def _unscaled(q, k, v, window):
    return _blocks(q, k, v, window, scale=False)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("one query at a time")
def _per_query(q, k, v, window):
    rows = []
    for i in range(q.shape[-2]):
        keys = slice(max(i - window + 1, 0), i + 1)
        scores = q[..., i:i + 1, :] @ k[..., keys, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        rows.append(scores.softmax(dim=-1) @ v[..., keys, :])
    return torch.cat(rows, dim=-2)


@bank.alternative("blocks through F.scaled_dot_product_attention")
def _blocks_sdpa(q, k, v, window):
    out = []
    for start in range(0, q.shape[-2], window):
        stop = min(start + window, q.shape[-2])
        first = max(start - window + 1, 0)
        query_pos, key_pos = _positions(start, stop, first, q.device)
        mask = (key_pos <= query_pos) & (query_pos - key_pos < window)
        out.append(F.scaled_dot_product_attention(q[..., start:stop, :], k[..., first:stop, :],
                                                  v[..., first:stop, :], attn_mask=mask))
    return torch.cat(out, dim=-2)


@bank.alternative("padded keys unfolded into windows, float32 einsum")
def _unfold(q, k, v, window):
    q, k, v = q.float(), k.float(), v.float()
    pad = (0, 0, window - 1, 0)  # window - 1 zero keys in front, so every query has window slots
    k_win = F.pad(k, pad).unfold(-2, window, 1)  # (..., pos, d_head, window): keys i - window + 1 .. i
    v_win = F.pad(v, pad).unfold(-2, window, 1)
    scores = torch.einsum("...qd,...qdw->...qw", q, k_win) / math.sqrt(q.shape[-1])
    real = torch.arange(q.shape[-2])[:, None] - (window - 1) + torch.arange(window) >= 0  # (pos, window)
    weights = scores.masked_fill(~real, float("-inf")).softmax(dim=-1)
    return torch.einsum("...qw,...qdw->...qd", weights, v_win)


SLIDING_WINDOW_ATTENTION = Exercise(
    name="sliding_window_attention",
    reference=sliding_window_attention,
    cases=_window_cases,
    run=_run_counted,
    run_in_kernel=True,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Walk through the queries a block of window at a time. The first query of a block looks furthest back: "
        "window - 1 positions before the block's start. Slice those keys, score, mask, softmax, mix.",
        "Inside a block, build the query positions as a column and the key positions as a row; a cell is allowed "
        "when the key is not after the query and the distance between them is below window. Write each block's "
        "output into its rows of an output tensor (or collect the blocks and concatenate).",
    ],
)
EXERCISES = {SLIDING_WINDOW_ATTENTION.name: SLIDING_WINDOW_ATTENTION}


def check_sliding_window_attention(fn):
    """Check a student's band-only ``sliding_window_attention(q, k, v, window)``."""
    return SLIDING_WINDOW_ATTENTION.check(fn)
