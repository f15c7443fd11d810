"""Checks for notebook 05 (multi-head attention): splitting into heads, merging them back, and a
whole ``MultiHeadAttention`` module written from scratch (the student writes ``forward``; the check
loads the same seeded weights, in the (n_heads, d_model, d_head) layout, into the student's module
and into ``torch.nn.MultiheadAttention``, the oracle, and compares their outputs)."""

from __future__ import annotations

import math

import torch

from course_utils import multihead
from course_utils.checks.core import Case, Exercise, Mistake
from course_utils.masking import causal_mask, padding_mask

F64 = torch.float64


# -- split / merge ------------------------------------------------------------------------------
def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Reference: (batch, pos, d_model) -> (batch, head, pos, d_head), head h = columns h*d_head:(h+1)*d_head."""
    return multihead.split_heads(x, n_heads)


def merge_heads(z: torch.Tensor) -> torch.Tensor:
    """Reference: (batch, head, pos, d_head) -> (batch, pos, head * d_head)."""
    return multihead.merge_heads(z)


def _split_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("x of shape (2, 5, 12), 3 heads", (torch.randn(2, 5, 12, generator=gen, dtype=F64), 3)),
        Case("x of shape (1, 4, 8), 2 heads", (torch.randn(1, 4, 8, generator=gen, dtype=F64), 2)),
        Case("x of shape (3, 6, 16), 4 heads", (torch.randn(3, 6, 16, generator=gen, dtype=F64), 4)),
    ]


def _merge_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("z of shape (2, 3, 5, 4)", (torch.randn(2, 3, 5, 4, generator=gen, dtype=F64),)),
        Case("z of shape (1, 2, 4, 4)", (torch.randn(1, 2, 4, 4, generator=gen, dtype=F64),)),
    ]


def _split_by_reshape_only(x, n_heads):
    batch, pos, d_model = x.shape
    return x.reshape(batch, n_heads, pos, d_model // n_heads)


def _split_strided(x, n_heads):
    batch, pos, d_model = x.shape
    return x.reshape(batch, pos, d_model // n_heads, n_heads).permute(0, 3, 1, 2)


def _split_no_transpose(x, n_heads):
    batch, pos, d_model = x.shape
    return x.reshape(batch, pos, n_heads, d_model // n_heads)


SPLIT_HEADS = Exercise(
    name="split_heads",
    reference=split_heads,
    cases=_split_cases,
    mistakes=[
        Mistake("reshape straight to heads", _split_by_reshape_only,
                "reshaping straight to (batch, head, pos, d_head) mixes positions into heads: reshape to (batch, pos, head, d_head), then transpose(1, 2)"),
        Mistake("strided columns", _split_strided,
                "head h owns a contiguous block of columns h*d_head:(h+1)*d_head, not every n_heads-th column: reshape to (batch, pos, n_heads, d_head)"),
        Mistake("no transpose", _split_no_transpose,
                "your result is (batch, pos, head, d_head): move the head axis before pos with transpose(1, 2)"),
    ],
)


def _merge_by_reshape_only(z):
    batch, n_heads, pos, d_head = z.shape
    return z.reshape(batch, pos, n_heads * d_head)


def _merge_interleaved(z):
    batch, n_heads, pos, d_head = z.shape
    return z.permute(0, 2, 3, 1).reshape(batch, pos, n_heads * d_head)


MERGE_HEADS = Exercise(
    name="merge_heads",
    reference=merge_heads,
    cases=_merge_cases,
    mistakes=[
        Mistake("reshape without transpose", _merge_by_reshape_only,
                "a plain reshape mixes positions across heads: first transpose(1, 2) to (batch, pos, head, d_head), then reshape"),
        Mistake("interleaved heads", _merge_interleaved,
                "the heads' outputs go side by side (head 0's d_head numbers, then head 1's...), not interleaved"),
    ],
)


# -- the whole module, written from scratch ---------------------------------------------------------
def _module_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    lengths_mask = causal_mask(5) & padding_mask([5, 3], 5)  # (batch, q_pos, k_pos): a batch with padding
    return [
        Case("d_model=12, 3 heads, causal mask, batch of 2", (12, 3, torch.randn(2, 5, 12, generator=gen, dtype=F64), causal_mask(5), seed)),
        Case("d_model=16, 4 heads, no mask", (16, 4, torch.randn(1, 6, 16, generator=gen, dtype=F64), None, seed + 100)),
        Case("d_model=8, 1 head, causal mask", (8, 1, torch.randn(2, 3, 8, generator=gen, dtype=F64), causal_mask(3), seed + 200)),
        Case("d_model=12, 2 heads, causal & padding mask of shape (batch, q_pos, k_pos)",
             (12, 2, torch.randn(2, 5, 12, generator=gen, dtype=F64), lengths_mask, seed + 300)),
    ]


WEIGHT_NAMES = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")


def _load_weights(module, d_model: int, n_heads: int, seed: int) -> None:
    """Seeded weights in the (n_heads, d_model, d_head) layout, copied into the module's parameters."""
    d_head = d_model // n_heads
    gen = torch.Generator().manual_seed(seed)
    shapes = {"W_Q": (n_heads, d_model, d_head), "W_K": (n_heads, d_model, d_head), "W_V": (n_heads, d_model, d_head),
              "W_O": (n_heads, d_head, d_model), "b_Q": (n_heads, d_head), "b_K": (n_heads, d_head),
              "b_V": (n_heads, d_head), "b_O": (d_model,)}
    with torch.no_grad():
        for name in WEIGHT_NAMES:
            getattr(module, name).copy_(torch.randn(shapes[name], generator=gen, dtype=F64) / math.sqrt(d_model))


def _run_module(cls, case: Case):
    d_model, n_heads, x, mask, seed = case.args
    module = cls(d_model, n_heads).double()
    _load_weights(module, d_model, n_heads, seed)
    with torch.no_grad():
        return module(x, mask)


class TorchOracle(multihead.MultiHeadAttention):
    """The reference: ``torch.nn.MultiheadAttention`` holding the same weights (its mask is True = blocked)."""

    def forward(self, x, mask=None):
        torch_mha = multihead.to_torch_mha(self)
        torch_mask = None
        if mask is not None:  # torch wants (q, k) or (batch * n_heads, q, k), True = not allowed
            full = mask.expand(x.shape[0], x.shape[1], x.shape[1])  # (batch, q_pos, k_pos)
            torch_mask = (~full).repeat_interleave(self.n_heads, dim=0)  # (batch * head, q_pos, k_pos)
        out, _ = torch_mha(x, x, x, attn_mask=torch_mask, need_weights=False)
        return out


def _project(x, W, b):
    return torch.einsum("bpm,hmd->bhpd", x, W) + b[:, None, :]  # (batch, head, pos, d_head)


def _attend(module, x, mask, scale, *, mask_on=True, softmax_dim=-1, out_bias=True):
    """A written-out multi-head forward with knobs for the typical mistakes."""
    q, k, v = (_project(x, getattr(module, f"W_{n}"), getattr(module, f"b_{n}")) for n in "QKV")
    scores = q @ k.transpose(-2, -1) * scale  # (batch, head, q_pos, k_pos)
    if mask is not None and mask_on:
        head_mask = mask[:, None] if mask.ndim == 3 else mask
        scores = scores.masked_fill(~head_mask, float("-inf"))
    z = torch.softmax(scores, dim=softmax_dim) @ v  # (batch, head, q_pos, d_head)
    out = torch.einsum("bhpd,hdm->bpm", z, module.W_O)
    return out + module.b_O if out_bias else out


class _NoScaling(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return _attend(self, x, mask, 1.0)


class _ScalesByDModel(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return _attend(self, x, mask, 1 / math.sqrt(self.d_model))


class _IgnoresMask(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return _attend(self, x, mask, 1 / math.sqrt(self.d_head), mask_on=False)


class _InvertedMask(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        mask = None if mask is None else ~mask | torch.eye(x.shape[1], dtype=torch.bool)  # keep rows non-empty
        return _attend(self, x, mask, 1 / math.sqrt(self.d_head))


class _SoftmaxOverQueries(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        out = _attend(self, x, mask, 1 / math.sqrt(self.d_head), softmax_dim=-2)
        return torch.nan_to_num(out)


class _NoOutputBias(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return _attend(self, x, mask, 1 / math.sqrt(self.d_head), out_bias=False)


class _NoOutputProjection(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return multihead.merge_heads(self.head_outputs(x, mask))


MULTI_HEAD_ATTENTION = Exercise(
    name="multi_head_attention",
    reference=TorchOracle,
    cases=_module_cases,
    run=_run_module,
    wants_class=True,
    function_name="MultiHeadAttention",
    mistakes=[
        Mistake("mask ignored", _IgnoresMask,
                "the mask was not applied: before the softmax, set the scores of the keys a query may not see to -inf"),
        Mistake("mask inverted", _InvertedMask,
                "your mask is the wrong way round: in this course True means 'may attend', so the False cells are the ones to block"),
        Mistake("no 1/sqrt(d_head)", _NoScaling,
                "divide the scores q·k by sqrt(d_head) before the softmax"),
        Mistake("1/sqrt(d_model)", _ScalesByDModel,
                "scale by sqrt(d_head), the width of one head's queries, not sqrt(d_model)"),
        Mistake("softmax over queries", _SoftmaxOverQueries,
                "the softmax runs over the keys (the last axis of the scores), so each query's weights sum to 1"),
        Mistake("no b_O", _NoOutputBias,
                "you left out the output bias b_O: add it once, after summing the heads' writes"),
        Mistake("no W_O", _NoOutputProjection,
                "each head's output z goes through its own W_O[h] back to d_model, and the heads' results are summed"),
    ],
)

EXERCISES = {ex.name: ex for ex in (SPLIT_HEADS, MERGE_HEADS, MULTI_HEAD_ATTENTION)}


def check_split_heads(fn):
    """Check a student's ``split_heads(x, n_heads)``."""
    return SPLIT_HEADS.check(fn)


def check_merge_heads(fn):
    """Check a student's ``merge_heads(z)``."""
    return MERGE_HEADS.check(fn)


def check_multi_head_attention(cls):
    """Check a student's ``MultiHeadAttention`` class (its ``forward(x, mask=None)``)."""
    return MULTI_HEAD_ATTENTION.check(cls)
