"""Exercise ``RotaryAttention``: notebook 05's grouped-query attention with RoPE inside and a KV cache.

Required form (stated in the notebook): ``RotaryAttention(d_model, n_heads, n_kv_heads, layout="halves")``,
a subclass of ``course_utils.attention.GroupedQueryAttention`` (its ``W_Q`` (n_heads, d_model,
d_head), ``W_K``/``W_V`` (n_kv_heads, d_model, d_head), ``W_O`` (n_heads, d_head, d_model), its
``qkv``), with ``forward(x, past_k=None, past_v=None)`` -> ``(out, k_all, v_all)``: ``x`` holds the
n_new positions after the n_past cached ones, which the new queries and keys are rotated as; the
output (batch, n_new, d_model) attends causally over all n_past + n_new keys; ``k_all``, ``v_all``
(batch, n_kv_heads, n_past + n_new, d_head) are what the next call gets as its cache.
The check loads seeded weights by name, feeds sequences whole and in chunks (each call given the
cache the last returned), in both pair layouts, and compares every position's output and the
cache's shapes with ``course_utils.llama.RotaryAttention.forward_cached``. It does not look inside
the cache: keeping the keys unrotated and rotating them all at every call is also right.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.attention.grouped_query import GroupedQueryAttention
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.todays_block._modules import run_layer, seeded_state
from course_utils.checks.weights import compare_or_convention
from course_utils.llama.attention import RotaryAttention as CourseRotaryAttention
from course_utils.llama.rotary import rotate_queries_keys
from course_utils.masking import causal_mask
from course_utils.positions import rope_rotate

F64 = torch.float64


class RotaryAttention(CourseRotaryAttention):
    """The reference: the course's layer, its cached path as ``forward``."""

    def forward(self, x, past_k=None, past_v=None):
        return self.forward_cached(x, past_k, past_v)


def _cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)

    def case(label, d_model, n_heads, n_kv_heads, layout, batch, chunks, offset):
        state = seeded_state(RotaryAttention(d_model, n_heads, n_kv_heads, layout=layout), seed + offset)
        x = torch.randn(batch, sum(chunks), d_model, generator=gen, dtype=F64)
        return Case(label, ((d_model, n_heads, n_kv_heads), {"layout": layout}, state, x, chunks))

    return [
        case("d_model=32, 4 query heads, 2 key/value heads, halves, 7 positions in one call, batch of 2",
             32, 4, 2, "halves", 2, (7,), 0),
        case("the same shape, interleaved pairs: 4 positions, then 1, then 2 more with the cache",
             32, 4, 2, "interleaved", 2, (4, 1, 2), 100),
        case("d_model=24, 6 query heads of width 4, 1 key/value head, halves: 3 positions, then 3, then 1 and 1",
             24, 6, 1, "halves", 1, (3, 3, 1, 1), 200),
        case("d_model=16, 2 heads and 2 key/value heads (multi-head), interleaved: 5 positions, then 1 and 1",
             16, 2, 2, "interleaved", 1, (5, 1, 1), 300),
    ]  # fmt: skip


class _Layer(GroupedQueryAttention):
    """The student's layout: the course's GQA weights plus the pair layout; the bank writes ``forward``."""

    def __init__(self, d_model, n_heads, n_kv_heads, layout="halves"):
        super().__init__(d_model, n_heads, n_kv_heads)
        self.layout = layout


def _rotate(module, q, k, offset):
    return rotate_queries_keys(q, k, offset, layout=module.layout)


def _append(past, new):
    return new if past is None else torch.cat([past, new], dim=2)


def _attend(module, q, k, v, mask):
    group = module.n_heads // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(module.d_head)).masked_fill(~mask, float("-inf"))
    return torch.einsum("bhpd,hdm->bpm", scores.softmax(dim=-1) @ v, module.W_O)


def _past(past_k):
    return 0 if past_k is None else past_k.shape[2]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "heads repeated before caching",
    "keep the cache at n_kv_heads heads (that is what grouped-query attention saves): return k and v before "
    "giving every query head its group's copy",
)
class _CacheRepeated(_Layer):
    def forward(self, x, past_k=None, past_v=None):
        q, k, v = self.qkv(x)
        q, k = _rotate(self, q, k, _past(past_k))
        group = self.n_heads // self.n_kv_heads
        k, v = _append(past_k, k.repeat_interleave(group, 1)), _append(past_v, v.repeat_interleave(group, 1))
        return _attend(self, q, k, v, causal_mask(q.shape[2], k.shape[2])), k, v


@bank.mistake(
    "values rotated",
    "rotate the queries and the keys only: RoPE places them so that q·k depends on the distance; the values "
    "are what is read, and stay as W_V wrote them",
)
class _ValuesRotated(_Layer):
    def forward(self, x, past_k=None, past_v=None):
        q, k, v = self.qkv(x)
        q, k = _rotate(self, q, k, _past(past_k))
        v = _rotate(self, v, v, _past(past_k))[0]
        k, v = _append(past_k, k), _append(past_v, v)
        return _attend(self, q, k, v, causal_mask(q.shape[2], k.shape[2])), k, v


@bank.mistake(
    "offset ignored",
    "with a cache the new rows are not positions 0, 1, ...: rotate them as positions n_past, n_past + 1, ... "
    "(offset = the number of cached positions, past_k.shape[2])",
)
class _OffsetIgnored(_Layer):
    def forward(self, x, past_k=None, past_v=None):
        q, k, v = self.qkv(x)
        q, k = _rotate(self, q, k, 0)
        k, v = _append(past_k, k), _append(past_v, v)
        return _attend(self, q, k, v, causal_mask(q.shape[2], k.shape[2])), k, v


@bank.mistake(
    "cached keys rotated again",
    "the cached keys were rotated when they were new: rotate only this call's keys (at offset n_past), "
    "then append them, or else cache unrotated keys and rotate them all, once, at every call",
)
class _RotatedTwice(_Layer):
    def forward(self, x, past_k=None, past_v=None):
        q, k, v = self.qkv(x)
        q = _rotate(self, q, q, _past(past_k))[0]
        k, v = _append(past_k, k), _append(past_v, v)
        k = _rotate(self, k, k, 0)[0]  # the cached rows a second time
        return _attend(self, q, k, v, causal_mask(q.shape[2], k.shape[2])), k, v


@bank.mistake(
    "mask not offset",
    "the new queries are the LAST n_new of the n_all positions: query i may see keys 0 .. n_past + i "
    "(causal_mask(n_new, n_all)), not a triangle from the top-left corner",
)
class _MaskTopLeft(_Layer):
    def forward(self, x, past_k=None, past_v=None):
        q, k, v = self.qkv(x)
        q, k = _rotate(self, q, k, _past(past_k))
        k, v = _append(past_k, k), _append(past_v, v)
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()
        return _attend(self, q, k, v, mask), k, v


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("unrotated keys cached, all of them rotated from position 0 at every call")
class _RawKeysCached(_Layer):
    def forward(self, x, past_k=None, past_v=None):
        q, k, v = self.qkv(x)
        q = _rotate(self, q, q, _past(past_k))[0]
        k, v = _append(past_k, k), _append(past_v, v)  # the cache holds W_K's output as it is
        return _attend(self, q, _rotate(self, k, k, 0)[0], v, causal_mask(q.shape[2], k.shape[2])), k, v


@bank.alternative("positions.rope_rotate at explicit positions, F.scaled_dot_product_attention(enable_gqa=True)")
class _FusedKernel(_Layer):
    def forward(self, x, past_k=None, past_v=None):
        q, k, v = self.qkv(x)
        n_past, n_new = _past(past_k), x.shape[1]
        positions = torch.arange(n_past, n_past + n_new)
        q, k = rope_rotate(q, positions, layout=self.layout), rope_rotate(k, positions, layout=self.layout)
        k, v = _append(past_k, k), _append(past_v, v)
        mask = causal_mask(n_new, k.shape[2])
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O), k, v


def _rope_by_hand(t, first, layout):
    d = t.shape[-1]
    angles = torch.arange(first, first + t.shape[2], dtype=t.dtype)[:, None] * 10_000.0 ** (
        -torch.arange(0, d, 2, dtype=t.dtype) / d
    )  # (pos, d/2): position times each pair's frequency
    cos, sin = angles.cos(), angles.sin()
    if layout == "halves":
        a, b = t[..., : d // 2], t[..., d // 2 :]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = t[..., 0::2], t[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


@bank.alternative("float32, RoPE written with cos and sin, a group axis on the queries, a mask from arange")
class _ByHand(_Layer):
    def forward(self, x, past_k=None, past_v=None):
        W_Q, W_K, W_V, W_O = (W.float() for W in (self.W_Q, self.W_K, self.W_V, self.W_O))
        x = x.float()
        q, k, v = (torch.einsum("bpm,hmd->bhpd", x, W) for W in (W_Q, W_K, W_V))
        n_past = _past(past_k)
        q, k = _rope_by_hand(q, n_past, self.layout), _rope_by_hand(k, n_past, self.layout)
        k, v = _append(past_k, k), _append(past_v, v)
        q = q.unflatten(1, (self.n_kv_heads, -1))  # (batch, kv_head, group, n_new, d_head)
        scores = torch.einsum("bkgqd,bkpd->bkgqp", q, k) / self.d_head**0.5
        allowed = torch.arange(k.shape[2]) <= torch.arange(n_past, n_past + x.shape[1])[:, None]
        z = torch.einsum("bkgqp,bkpd->bkgqd", scores.masked_fill(~allowed, -1e30).softmax(-1), v)
        return torch.einsum("bhpd,hdm->bpm", z.flatten(1, 2), W_O), k, v


ROTARY_ATTENTION = Exercise(
    name="rotary_attention",
    reference=RotaryAttention,
    cases=_cases,
    run=run_layer,
    compare=compare_or_convention(),
    wants_class=True,
    function_name="RotaryAttention",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "A cache changes one thing: where the new rows sit. They are positions n_past, n_past + 1, ..., with n_past "
        "the number of cached positions (0 without a cache); rotate what is new as those positions, then attend "
        "over the cached rows and the new ones together.",
        "n_past is past_k.shape[2]; your rotate_queries_keys takes it as offset. The cached keys came out of an "
        "earlier call already rotated: put them before the new ones along the position axis, and build the mask "
        "for n_new queries that are the last rows of n_all (query i sees keys up to n_past + i). The cache you "
        "return keeps n_kv_heads heads; repeat them only for the scores.",
    ],
)
EXERCISES = {ROTARY_ATTENTION.name: ROTARY_ATTENTION}


def check_rotary_attention(cls):
    """Check a student's ``RotaryAttention`` class (``__init__(d_model, n_heads, n_kv_heads, layout)``, ``forward``)."""
    return ROTARY_ATTENTION.check(cls)
