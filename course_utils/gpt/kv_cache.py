"""The KV cache, written to be read: keep every layer's keys and values, run the model on new tokens only.

Covers ``KVCache`` (per layer, the keys and values of every position so far), ``project_qkv`` and
``write_heads`` (notebook 05's per-head projections, written out with einsum), ``cached_attention``
(append the new keys and values, let the new queries attend causally to all of them) and the
cached step that chains them block by block. With the cache each new token costs one position's
work instead of the whole sequence's, and the logits are the same (tested).
``cached_attention(q, k, v)`` on an empty cache is plain causal attention.
Leaves out the fused version of the same step (``kv_cache_fused.py``), the entry point that picks
between them and the sampling loop (``generation.py``), and a cache that slides past n_ctx.
"""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.gpt.cache import KVCache
from course_utils.gpt.model import GPT
from course_utils.masking import causal_mask
from course_utils.attention.multihead import MultiHeadAttention

def cached_attention(
    q: Float[Tensor, "batch head n_new d_head"],
    k_new: Float[Tensor, "batch head n_new d_head"],
    v_new: Float[Tensor, "batch head n_new d_head"],
    k_cache: Tensor | None = None,
    v_cache: Tensor | None = None,
):
    """Append the new keys/values to the cache; the new queries attend causally to all of them.

    Returns ``(z, k_all, v_all)``; ``z`` is (batch, head, n_new, d_head). With an empty cache this is
    plain causal attention. The n_new queries are the last n_new positions, so query i may see keys
    0 .. length_before + i (``causal_mask(n_new, n_all)``).
    """
    k_all = k_new if k_cache is None else torch.cat([k_cache, k_new], dim=2)  # (batch, head, n_all, d_head)
    v_all = v_new if v_cache is None else torch.cat([v_cache, v_new], dim=2)
    mask = causal_mask(q.shape[2], k_all.shape[2], device=q.device)  # (n_new, n_all)
    return scaled_dot_product_attention(q, k_all, v_all, mask), k_all, v_all


def project_qkv(attn: MultiHeadAttention, x: Float[Tensor, "batch pos d_model"]):
    """q, k, v of every head from the module's W_Q/W_K/W_V (head, d_model, d_head) and biases,
    each (batch, head, pos, d_head)."""
    out = []
    for W, b in ((attn.W_Q, attn.b_Q), (attn.W_K, attn.b_K), (attn.W_V, attn.b_V)):
        y = torch.einsum("bpm,hmd->bhpd", x, W)  # (batch, head, pos, d_head)
        out.append(y if b is None else y + b[:, None, :])
    return out


def write_heads(
    attn: MultiHeadAttention, z: Float[Tensor, "batch head pos d_head"]
) -> Float[Tensor, "batch pos d_model"]:
    """Every head's z through its slice of W_O (head, d_head, d_model), summed, plus b_O."""
    out = torch.einsum("bhpd,hdm->bpm", z, attn.W_O)  # (batch, pos, d_model)
    return out if attn.b_O is None else out + attn.b_O


def _reference_step(model: GPT, tokens: Int[Tensor, "batch n_new"], cache: KVCache):
    """The readable cached forward, on checked tokens: notebook 05's pieces, one block at a time."""
    start = cache.length
    x = model.embed(tokens, start=start)  # (batch, n_new, d_model)
    new = KVCache()
    for layer, block in enumerate(model.blocks):
        old_k, old_v = (cache.keys[layer], cache.values[layer]) if start else (None, None)
        q, k, v = project_qkv(block.attn, block.ln1(x))
        z, k_all, v_all = cached_attention(q, k, v, old_k, old_v)
        new.keys.append(k_all)
        new.values.append(v_all)
        x = x + write_heads(block.attn, z)
        x = x + block.mlp(block.ln2(x))
    return model.unembed(x), new
