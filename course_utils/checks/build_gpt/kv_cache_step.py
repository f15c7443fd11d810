"""Exercise ``kv_cache_step(q, k_new, v_new, k_cache=None, v_cache=None)``: one attention step with a KV cache.

Required form (stated in the notebook): all inputs (batch, head, ·, d_head), ``q``, ``k_new``,
``v_new`` for the n_new newest positions, the caches for the positions before them, or None when there
are none (then it is plain causal attention: the student's ``CausalAttention`` runs every forward
through it); return ``(z, k_all, v_all)``: the new queries' causal attention over every key so far,
(batch, head, n_new, d_head), and the caches with the new keys and values appended after the old ones.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.gpt.kv_cache import cached_attention
from course_utils.masking import causal_mask


def kv_cache_step(q, k_new, v_new, k_cache=None, v_cache=None):
    """Reference: ``kv_cache.cached_attention`` -> (z, k_all, v_all)."""
    return cached_attention(q, k_new, v_new, k_cache, v_cache)


def _kv_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen)  # noqa: E731
    return [
        Case(
            "one new token after 5 cached (batch 2, 3 heads, d_head 8)",
            (rand(2, 3, 1, 8), rand(2, 3, 1, 8), rand(2, 3, 1, 8), rand(2, 3, 5, 8), rand(2, 3, 5, 8)),
        ),
        Case(
            "3 new tokens after 4 cached",
            (rand(1, 2, 3, 4), rand(1, 2, 3, 4), rand(1, 2, 3, 4), rand(1, 2, 4, 4), rand(1, 2, 4, 4)),
        ),
        Case(
            "no cache yet (None, None): 5 positions, plain causal attention",
            (rand(2, 2, 5, 4), rand(2, 2, 5, 4), rand(2, 2, 5, 4), None, None),
        ),
    ]


def _append(cache, new):
    """The cache with the new positions after it (dim 2); the new ones alone when there is no cache yet."""
    return new if cache is None else torch.cat([cache, new], 2)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("cache not used", "the new queries must attend to the cached keys too: concatenate first, then attend")
def kv_no_append(q, k_new, v_new, k_cache, v_cache):
    z = F.scaled_dot_product_attention(q, k_new, v_new, is_causal=True)
    return z, _append(k_cache, k_new), _append(v_cache, v_new)


@bank.mistake("new keys first", "append the new keys and values AFTER the cached ones (positions stay in order)")
def kv_new_first(q, k_new, v_new, k_cache, v_cache):
    k, v = (k_new, v_new) if k_cache is None else (torch.cat([k_new, k_cache], 2), torch.cat([v_new, v_cache], 2))
    n_q, n_k = q.shape[2], k.shape[2]
    mask = causal_mask(n_q, n_k)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), k, v


@bank.mistake("no scaling", "divide the scores by sqrt(d_head), as in every attention")
def kv_no_scale(q, k_new, v_new, k_cache, v_cache):
    k, v = _append(k_cache, k_new), _append(v_cache, v_new)
    scores = (q @ k.transpose(-2, -1)).masked_fill(~causal_mask(q.shape[2], k.shape[2]), float("-inf"))
    return torch.softmax(scores, -1) @ v, k, v


@bank.mistake(
    "no mask without a cache",
    "the new positions are causal among themselves too: with no cache (None) it is plain causal attention, "
    "causal_mask(n_new), not attention over every new key",
)
def kv_unmasked_without_cache(q, k_new, v_new, k_cache, v_cache):
    if k_cache is None:
        return F.scaled_dot_product_attention(q, k_new, v_new), k_new, v_new
    k, v = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(q.shape[2], k.shape[2])), k, v


@bank.mistake(
    "mask from the top-left",
    "the new queries are the LAST positions: query i may see keys up to n_cached + i (causal_mask(n_new, n_all))",
)
def kv_top_left_mask(q, k_new, v_new, k_cache, v_cache):
    k, v = _append(k_cache, k_new), _append(v_cache, v_new)
    mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()  # as if the queries came first
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), k, v


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("masked scores by hand")
def _kv_manual(q, k_new, v_new, k_cache, v_cache):
    k, v = _append(k_cache, k_new), _append(v_cache, v_new)
    n_q, n_k = q.shape[2], k.shape[2]
    allowed = torch.arange(n_k)[None, :] <= torch.arange(n_k - n_q, n_k)[:, None]  # (n_q, n_k)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, -1) @ v, k, v


@bank.alternative("einsum and an additive mask")
def _kv_einsum(q, k_new, v_new, k_cache=None, v_cache=None):
    old_k = k_new[:, :, :0] if k_cache is None else k_cache  # an empty cache: nothing before the new positions
    old_v = v_new[:, :, :0] if v_cache is None else v_cache
    k, v = torch.cat([old_k, k_new], dim=-2), torch.cat([old_v, v_new], dim=-2)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * q.shape[-1] ** -0.5
    scores = scores + torch.zeros(q.shape[2], k.shape[2]).masked_fill(
        ~causal_mask(q.shape[2], k.shape[2]), float("-inf")
    )
    return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v), k, v


@bank.alternative("F.scaled_dot_product_attention")
def _kv_sdpa(q, k_new, v_new, k_cache, v_cache):
    k, v = _append(k_cache, k_new), _append(v_cache, v_new)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(q.shape[2], k.shape[2])), k, v


KV_CACHE_STEP = Exercise(
    name="kv_cache_step",
    reference=kv_cache_step,
    cases=_kv_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "The cache grows along the position axis (dim 2 of (batch, head, pos, d_head)); "
        "the queries are only the new positions. No cache yet (None) means nothing comes before them.",
        "k_all = cat(k_cache, k_new) on dim 2 (same for v); the mask is causal_mask(n_new, n_all), "
        "whose rows are the last "
        "n_new positions; then ordinary scaled dot-product attention.",
    ],
)
EXERCISES = {KV_CACHE_STEP.name: KV_CACHE_STEP}


def check_kv_cache_step(fn):
    """Check a student's ``kv_cache_step(q, k_new, v_new, k_cache=None, v_cache=None)``."""
    return KV_CACHE_STEP.check(fn)
