"""The KV cache's fast path: the same cached step through PyTorch's kernels, K and V written in place.

Covers ``_Buffers`` (every layer's K and V storage, allocated once for the positions to come, so
a step writes its new position in place instead of copying the cache with ``torch.cat``),
``_fused_layers`` (each block's weights gathered once per call, Q, K and V side by side) and
``_fused_cached_blocks`` (per block: LayerNorm, one matmul for q, k and v of every head, PyTorch's
SDPA over the filled part of the buffers, W_O and the MLP added onto the residual stream inside
their matmuls). At the course model's size a step's cost is mostly per-call overhead; this is
what ``forward_with_cache(..., impl="fused")`` and ``generate(..., impl="fused")`` run. Same
tokens as the readable cache of ``kv_cache.py`` (tested in tests/test_generation.py).
Leaves out the readable step (``kv_cache.py``), batched prompts of different lengths and paged caches.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor

from course_utils.gpt.model import GPT
from course_utils.gpt.fused import _ACTIVATIONS, _linear, _qkv_weight
from course_utils.gpt.cache import KVCache, _Buffers
from course_utils.masking import causal_mask


def _fused_layers(model: GPT) -> list[tuple]:
    """Each block's parameters as the cached step uses them, gathered once per call: Q, K and V side by side."""
    layers = []
    for block in model.blocks:
        attn, mlp, ln1, ln2 = block.attn, block.mlp, block.ln1, block.ln2
        W_QKV, b_QKV = _qkv_weight(attn)  # (d_model, 3·d_model), (3·d_model,)
        layers.append(
            (
                ln1.w,
                ln1.b,
                ln1.eps,
                W_QKV,
                b_QKV,
                attn.W_O.reshape(-1, attn.d_model),
                attn.b_O,
                ln2.w,
                ln2.b,
                ln2.eps,
                mlp.W_in,
                mlp.b_in,
                _ACTIVATIONS[mlp.activation],
                mlp.W_out,
                mlp.b_out,
            )
        )
    return layers


def _fused_cached_blocks(
    layers: list[tuple], x: Float[Tensor, "batch n_new d_model"], buffers: _Buffers, start: int, n_heads: int
) -> Float[Tensor, "batch n_new d_model"]:
    """Every block on the new positions ``start ..``: their K and V are written into ``buffers`` in place.

    Per block: LayerNorm, one matmul for q, k, v of every head, SDPA of the new queries over the
    filled part of the buffers (no mask for one query: it sees everything), W_O added onto the
    residual stream in the same matmul, then the MLP. Same maths as the reference cache (tested).
    """
    batch, n_new, d_model = x.shape
    end, d_head, shape = start + n_new, d_model // n_heads, (d_model,)
    mask = None if n_new == 1 or start == 0 else causal_mask(n_new, end, device=x.device)  # (n_new, end)
    causal = n_new > 1 and start == 0  # the prompt on an empty cache: ordinary causal attention
    x = x.reshape(batch * n_new, d_model)
    layer_norm, sdpa, addmm = torch.layer_norm, F.scaled_dot_product_attention, torch.addmm  # looked up once
    for (w1, b1, eps1, W_QKV, b_QKV, W_O, b_O, w2, b2, eps2, W_in, b_in, act, W_out, b_out), K, V in zip(
        layers, buffers.keys, buffers.values
    ):
        qkv = _linear(layer_norm(x, shape, w1, b1, eps1), W_QKV, b_QKV)  # (batch·n_new, 3·d_model)
        q, k, v = qkv.view(batch, n_new, 3, n_heads, d_head).permute(2, 0, 3, 1, 4)  # (batch, head, n_new, d_head)
        K[:, :, start:end] = k  # in place: no copy of the earlier positions
        V[:, :, start:end] = v
        z = sdpa(q, K[:, :, :end], V[:, :, :end], attn_mask=mask, is_causal=causal)  # (batch, head, n_new, d_head)
        x = addmm(x, z.transpose(1, 2).reshape(batch * n_new, d_model), W_O)  # x + the heads' writes
        if b_O is not None:
            x += b_O
        x = addmm(x, act(_linear(layer_norm(x, shape, w2, b2, eps2), W_in, b_in)), W_out)  # x + the MLP's write
        if b_out is not None:
            x += b_out
    buffers.filled = end
    return x.view(batch, n_new, d_model)


def _final_logits(model: GPT, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_vocab"]:
    ln = model.ln_final
    return F.layer_norm(x, (ln.d_model,), ln.w, ln.b, ln.eps) @ model.unembedding()


def _buffers_for(model: GPT, cache: KVCache, batch: int, end: int, like: Tensor) -> _Buffers:
    """The cache's own buffers when the new positions can go straight after it, else new ones holding a copy."""
    buffers, start = cache._buffers, cache.length
    if buffers is not None and buffers.filled == start and buffers.capacity >= end:
        return buffers  # nobody has written past this cache: extend it in place
    # a reference cache, a full buffer, or a cache already continued another way (keep that one intact)
    capacity = min(model.cfg.n_ctx, max(end, 2 * (start if buffers is None else buffers.capacity)))
    return _Buffers.allocate(model, batch, capacity, like, cache)
