"""Exercise ``CausalAttention``: the attention sub-layer of a GPT block, a class the student writes whole.

Required form (stated in the notebook): ``CausalAttention(cfg)`` for a ``GPTConfig``, holding
``W_Q``, ``W_K``, ``W_V`` (n_heads, d_model, d_head), ``W_O`` (n_heads, d_head, d_model), ``b_Q``,
``b_K``, ``b_V`` (n_heads, d_head) and ``b_O`` (d_model,) under exactly these names (those of
``course_utils.gpt.model``, so GPT-2's weights load); ``forward(x, cache=None)`` maps (batch, pos, d_model) to
the same shape, causal without being given a mask, through the student's ``kv_cache_step``; given a
``layer_cache.LayerCache``, x holds the positions after the cached ones, and the cache keeps every key and
value so far. The check loads a course block's attention weights into it and compares with
``layer_cache.CachedAttention`` (notebook 05's attention with ``causal_mask(pos)`` when there is no cache),
once on a whole sequence, once fed in three pieces with one cache (``_classes.run_class``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import F64, tiny_model
from course_utils.checks.build_gpt._classes import course_state, run_class
from course_utils.checks.weights import compare_or_convention
from course_utils.gpt.layer_cache import CachedAttention
from course_utils.masking import causal_mask
from course_utils.attention.multihead import merge_heads


def _attention_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    model = tiny_model(seed)
    cases = [
        Case(
            f"{name}, d_model 16, 2 heads, {batch} x {pos} positions",
            (model.cfg, course_state(model.blocks[layer].attn), torch.randn(batch, pos, 16, generator=gen, dtype=F64)),
        )
        for name, layer, batch, pos in (("block 0's weights", 0, 2, 6), ("block 1's weights", 1, 1, 9))
    ]
    x = torch.randn(2, 9, 16, generator=gen, dtype=F64)
    return cases + [Case("with a LayerCache: 9 positions fed as 4, then 1, then 4 (the outputs joined)",
                         (model.cfg, course_state(model.blocks[1].attn), x, (4, 1, 4), None))]


def _qkv(module, x):
    return [torch.einsum("bpm,hmd->bhpd", x, getattr(module, f"W_{n}")) + getattr(module, f"b_{n}")[:, None]
            for n in "QKV"]  # each (batch, head, pos, d_head)


def _with_cache(cache, k, v, store=True):
    """Every key and value so far (the cache's, then the new ones); stored back in the cache when ``store``."""
    if cache is not None and cache.k is not None:
        k, v = torch.cat([cache.k, k], 2), torch.cat([cache.v, v], 2)
    if cache is not None and store:
        cache.k, cache.v = k, v
    return k, v


def _attend(module, x, cache, *, scale=None, causal=True, softmax_dim=-1, mask_after=False, W_O=True, store=True):
    """A written-out causal attention over the cache and the new positions, with knobs for the typical mistakes."""
    q, k, v = _qkv(module, x)
    k, v = _with_cache(cache, k, v, store)
    scores = q @ k.transpose(-2, -1) * (scale or 1 / math.sqrt(q.shape[-1]))  # (batch, head, q_pos, k_pos)
    allowed = causal_mask(q.shape[2], k.shape[2])
    if causal and not mask_after:
        scores = scores.masked_fill(~allowed, float("-inf"))
    pattern = scores.softmax(dim=softmax_dim).nan_to_num()
    if mask_after:
        pattern = pattern * allowed
    z = pattern @ v  # (batch, head, q_pos, d_head)
    if not W_O:
        return merge_heads(z)
    return torch.einsum("bhpd,hdm->bpm", z, module.W_O) + module.b_O


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("not causal", "mask the scores so that a position sees itself and earlier positions, never later ones")
class _NotCausal(CachedAttention):
    def forward(self, x, cache=None):
        return _attend(self, x, cache, causal=False)


@bank.mistake(
    "masked after the softmax",
    "mask the scores (to -inf) BEFORE the softmax: zeroing weights afterwards leaves rows that no longer sum to 1",
)
class _MaskAfterSoftmax(CachedAttention):
    def forward(self, x, cache=None):
        return _attend(self, x, cache, mask_after=True)


@bank.mistake("1/sqrt(d_model)", "scale the scores by 1/sqrt(d_head), the width of one head's queries")
class _ScaleByDModel(CachedAttention):
    def forward(self, x, cache=None):
        return _attend(self, x, cache, scale=1 / math.sqrt(x.shape[-1]))


@bank.mistake(
    "softmax over queries", "the softmax runs over the keys (the last axis), so each query's weights sum to 1"
)
class _SoftmaxOverQueries(CachedAttention):
    def forward(self, x, cache=None):
        return _attend(self, x, cache, softmax_dim=-2)


@bank.mistake("no W_O", "each head's output goes back to d_model through its own W_O[h]; sum the heads, add b_O")
class _NoOutputProjection(CachedAttention):
    def forward(self, x, cache=None):
        return _attend(self, x, cache, W_O=False)


@bank.mistake(
    "the cache never updated",
    "keep what kv_cache_step returns: put k_all and v_all back into cache.k and cache.v, so the next call sees "
    "these positions too",
)
class _CacheNotStored(CachedAttention):
    def forward(self, x, cache=None):
        return _attend(self, x, cache, store=False)


@bank.mistake(
    "the cache replaced by the new keys",
    "store every key and value so far (the k_all and v_all kv_cache_step returns), not only the new positions'",
)
class _CacheOnlyNew(CachedAttention):
    def forward(self, x, cache=None):
        out = _attend(self, x, cache, store=False)
        if cache is not None:
            cache.k, cache.v = _qkv(self, x)[1:]
        return out


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.scaled_dot_product_attention with causal_mask(n_new, n_all)")
class _TorchSDPA(CachedAttention):
    def forward(self, x, cache=None):
        q, k, v = _qkv(self, x)
        k, v = _with_cache(cache, k, v)
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(q.shape[2], k.shape[2]))
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O) + self.b_O


@bank.alternative("course attention function, W_O as one wide matrix, an empty cache as zero-length tensors")
class _CourseFunction(CachedAttention):
    def forward(self, x, cache=None):
        q, k, v = _qkv(self, x)
        old_k = k[:, :, :0] if cache is None or cache.k is None else cache.k
        old_v = v[:, :, :0] if cache is None or cache.v is None else cache.v
        k, v = torch.cat([old_k, k], 2), torch.cat([old_v, v], 2)
        if cache is not None:
            cache.k, cache.v = k, v
        z = scaled_dot_product_attention(q, k, v, causal_mask(q.shape[2], k.shape[2]))
        return merge_heads(z) @ self.W_O.reshape(-1, x.shape[-1]) + self.b_O  # (batch, pos, n_heads·d_head) @ wide


@bank.alternative("nanoGPT's mask: a lower-triangular buffer built once, registered with persistent=False")
class _MaskBuffer(CachedAttention):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.register_buffer("tril", torch.ones(cfg.n_ctx, cfg.n_ctx, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x, cache=None):
        start = 0 if cache is None or cache.k is None else cache.k.shape[2]
        q, k, v = _qkv(self, x)
        k, v = _with_cache(cache, k, v)
        end = start + x.shape[1]
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~self.tril[start:end, :end],
                                                                             float("-inf"))
        return torch.einsum("bhpd,hdm->bpm", scores.softmax(-1) @ v, self.W_O) + self.b_O


@bank.alternative("float32 loop over heads, -1e9 fill")
class _HeadLoop(CachedAttention):
    def forward(self, x, cache=None):
        q, k, v = _qkv(self, x)
        k, v = _with_cache(cache, k, v)
        n_q, n_k = q.shape[2], k.shape[2]
        upper = torch.triu(torch.ones(n_q, n_k, dtype=torch.bool), diagonal=n_k - n_q + 1)
        out = 0.0
        for h in range(self.n_heads):
            scores = (q[:, h].float() @ k[:, h].float().mT / math.sqrt(q.shape[-1])).masked_fill(upper, -1e9)
            out = out + scores.softmax(-1) @ v[:, h].float() @ self.W_O[h].float()
        return out + self.b_O.float()


CAUSAL_ATTENTION = Exercise(
    name="causal_attention",
    reference=CachedAttention,
    cases=_attention_cases,
    run=run_class,
    compare=compare_or_convention(),
    wants_class=True,
    function_name="CausalAttention",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "It is notebook 05's multi-head attention: q, k and v for every head, then your kv_cache_step does the "
        "attention itself (the cache's keys and values, or none), then every head back to d_model and summed.",
        "einsum with letters b, p, m, h, d names every axis of the projections. Give kv_cache_step the cache's k and "
        "v (None, None without a cache) and, with a cache, store the k_all and v_all it returns in cache.k, cache.v.",
    ],
)
EXERCISES = {CAUSAL_ATTENTION.name: CAUSAL_ATTENTION}


def check_causal_attention(cls):
    """Check a student's ``CausalAttention`` class (built with a GPTConfig, its ``forward(x, cache=None)``)."""
    return CAUSAL_ATTENTION.check(cls)
