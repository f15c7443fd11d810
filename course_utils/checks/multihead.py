"""Checks for notebook 05 (multi-head attention): splitting into heads, merging them back, and a
whole ``MultiHeadAttention`` module (the student writes ``forward``; the check loads the same
seeded weights into the student's module and the reference)."""

from __future__ import annotations

import math

import torch

from course_utils import multihead
from course_utils.attention import scaled_dot_product_attention
from course_utils.checks.core import Case, Exercise, Mistake
from course_utils.masking import causal_mask

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


# -- the whole module -----------------------------------------------------------------------------
def _module_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("d_model=12, 3 heads, causal mask, batch of 2", (12, 3, torch.randn(2, 5, 12, generator=gen, dtype=F64), causal_mask(5), seed)),
        Case("d_model=16, 4 heads, no mask", (16, 4, torch.randn(1, 6, 16, generator=gen, dtype=F64), None, seed + 100)),
        Case("d_model=8, 1 head, causal mask", (8, 1, torch.randn(2, 3, 8, generator=gen, dtype=F64), causal_mask(3), seed + 200)),
    ]


def _load_weights(module, d_model: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    bound = 1 / math.sqrt(d_model)
    with torch.no_grad():
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            layer = getattr(module, name)
            layer.weight.copy_((torch.rand(d_model, d_model, generator=gen, dtype=F64) * 2 - 1) * bound)
            layer.bias.copy_((torch.rand(d_model, generator=gen, dtype=F64) * 2 - 1) * bound)


def _run_module(cls, case: Case):
    d_model, n_heads, x, mask, seed = case.args
    module = cls(d_model, n_heads).double()
    _load_weights(module, d_model, seed)
    with torch.no_grad():
        return module(x, mask)


class _NoScaling(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        q, k, v = (multihead.split_heads(W(x), self.n_heads) for W in (self.W_Q, self.W_K, self.W_V))
        scaled_q = q * math.sqrt(self.d_head)  # cancels the 1/sqrt(d_head) inside
        return self.W_O(multihead.merge_heads(scaled_dot_product_attention(scaled_q, k, v, mask)))


class _ScalesByDModel(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        q, k, v = (multihead.split_heads(W(x), self.n_heads) for W in (self.W_Q, self.W_K, self.W_V))
        q = q * math.sqrt(self.d_head / self.d_model)  # overall 1/sqrt(d_model)
        return self.W_O(multihead.merge_heads(scaled_dot_product_attention(q, k, v, mask)))


class _ReshapeSplit(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        q, k, v = (_split_by_reshape_only(W(x), self.n_heads) for W in (self.W_Q, self.W_K, self.W_V))
        return self.W_O(_merge_by_reshape_only(scaled_dot_product_attention(q, k, v, mask)))


class _NoOutputProjection(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return multihead.merge_heads(self.head_outputs(x, mask))


class _IgnoresMask(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return super().forward(x, None)


MULTI_HEAD_ATTENTION = Exercise(
    name="multi_head_attention",
    reference=multihead.MultiHeadAttention,
    cases=_module_cases,
    run=_run_module,
    wants_class=True,
    function_name="MultiHeadAttention",
    mistakes=[
        Mistake("mask ignored", _IgnoresMask,
                "the mask was not applied: pass it to the attention so queries cannot see later keys"),
        Mistake("no 1/sqrt(d_head)", _NoScaling,
                "divide the scores q·k by sqrt(d_head) before the softmax"),
        Mistake("1/sqrt(d_model)", _ScalesByDModel,
                "scale by sqrt(d_head), the width of one head's queries, not sqrt(d_model)"),
        Mistake("reshape without transpose", _ReshapeSplit,
                "split with reshape(batch, pos, n_heads, d_head).transpose(1, 2); a plain reshape to (batch, n_heads, pos, d_head) mixes positions"),
        Mistake("no W_O", _NoOutputProjection,
                "after merging the heads, project with W_O"),
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
