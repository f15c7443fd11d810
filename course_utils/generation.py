"""Generating text with the small GPT: the sampling loop, and the same loop with a KV cache.

Covers ``generate`` (run the model, turn the last position's logits into the next token with
notebook 04's ``sample_next_token``: greedy at temperature 0, else temperature, top-k, top-p; append;
repeat), ``cached_attention`` (one attention step that appends the new keys and values to the cache
and lets the new queries look at everything so far) and ``forward_with_cache`` (the model run on
new tokens only, reusing every earlier position's K and V). With the cache each new token costs one
position's work instead of the whole sequence's, and the tokens are the same (tested).
Leaves out beam search, batched prompts of different lengths and a cache that slides past n_ctx.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.attention import scaled_dot_product_attention
import torch.nn.functional as F

from course_utils.gpt import GPT, check_tokens, fused_mlp
from course_utils.masking import causal_mask
from course_utils.multihead import MultiHeadAttention
from course_utils.sampling import sample_next_token


@dataclass
class KVCache:
    """Per layer, the keys and values of every position seen so far, each (batch, head, pos, d_head)."""

    keys: list[Tensor] = field(default_factory=list)
    values: list[Tensor] = field(default_factory=list)

    @property
    def length(self) -> int:
        return 0 if not self.keys else self.keys[0].shape[2]


def cached_attention(q: Float[Tensor, "batch head n_new d_head"], k_new: Float[Tensor, "batch head n_new d_head"],
                     v_new: Float[Tensor, "batch head n_new d_head"], k_cache: Tensor | None = None,
                     v_cache: Tensor | None = None):
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
    """q, k, v of every head from the module's W_Q/W_K/W_V (head, d_model, d_head) and biases, each (batch, head, pos, d_head)."""
    out = []
    for W, b in ((attn.W_Q, attn.b_Q), (attn.W_K, attn.b_K), (attn.W_V, attn.b_V)):
        y = torch.einsum("bpm,hmd->bhpd", x, W)  # (batch, head, pos, d_head)
        out.append(y if b is None else y + b[:, None, :])
    return out


def write_heads(attn: MultiHeadAttention, z: Float[Tensor, "batch head pos d_head"]) -> Float[Tensor, "batch pos d_model"]:
    """Every head's z through its slice of W_O (head, d_head, d_model), summed, plus b_O."""
    out = torch.einsum("bhpd,hdm->bpm", z, attn.W_O)  # (batch, pos, d_model)
    return out if attn.b_O is None else out + attn.b_O


def _fused_step(block, x: Tensor, old_k, old_v):
    """The cached attention and MLP of one block with batched matmuls and PyTorch's SDPA (same numbers, tested).

    Each head's weights are used where they lie ((head, d_model, d_head) broadcast over the batch):
    for a step of one token, copying them into one fused matrix would cost more than the matmuls.
    """
    attn, h = block.attn, block.ln1(x)[:, None]  # (batch, 1, n_new, d_model)
    q, k, v = (h @ W if b is None else h @ W + b[:, None, :]  # (batch, head, n_new, d_head)
               for W, b in ((attn.W_Q, attn.b_Q), (attn.W_K, attn.b_K), (attn.W_V, attn.b_V)))
    k_all = k if old_k is None else torch.cat([old_k, k], dim=2)  # (batch, head, n_all, d_head)
    v_all = v if old_v is None else torch.cat([old_v, v], dim=2)
    mask = None if q.shape[2] == 1 else causal_mask(q.shape[2], k_all.shape[2], device=q.device)  # one query sees all
    out = (F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask) @ attn.W_O).sum(dim=1)  # (batch, n_new, d_model)
    x = x + (out if attn.b_O is None else out + attn.b_O)
    return x + fused_mlp(block.mlp, block.ln2(x)), k_all, v_all


@torch.no_grad()
def forward_with_cache(model: GPT, tokens: Int[Tensor, "batch n_new"], cache: KVCache | None = None,
                       impl: str = "reference"):
    """Logits for ``tokens`` placed after the ``cache.length`` positions already cached; returns ``(logits, cache)``.

    ``impl="fused"`` runs the same step through PyTorch's kernels (``gpt.fused_qkv``, SDPA).
    """
    if impl not in ("reference", "fused"):
        raise ValueError(f"impl must be 'reference' or 'fused', got {impl!r}")
    if model.cfg.norm != "pre":
        raise ValueError("forward_with_cache is written for pre-norm models")
    cache = KVCache() if cache is None else cache
    start = cache.length
    tokens = check_tokens(tokens, model.cfg)
    if start + tokens.shape[1] > model.cfg.n_ctx:
        raise ValueError(f"the cache holds {start} positions and {tokens.shape[1]} more would pass the context "
                         f"n_ctx={model.cfg.n_ctx}; generate with use_cache=False to slide the window")
    x = model.embed(tokens, start=start)  # (batch, n_new, d_model)
    new = KVCache()
    for layer, block in enumerate(model.blocks):
        old_k, old_v = (cache.keys[layer], cache.values[layer]) if start else (None, None)
        if impl == "fused":
            x, k_all, v_all = _fused_step(block, x, old_k, old_v)
            new.keys.append(k_all)
            new.values.append(v_all)
            continue
        q, k, v = project_qkv(block.attn, block.ln1(x))
        z, k_all, v_all = cached_attention(q, k, v, old_k, old_v)
        new.keys.append(k_all)
        new.values.append(v_all)
        x = x + write_heads(block.attn, z)
        x = x + block.mlp(block.ln2(x))
    return model.unembed(x), new


def _check_generation_args(max_new_tokens, temperature) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 means greedy), got {temperature}")


@torch.no_grad()
def generate(model: GPT, prompt: Int[Tensor, "batch pos"], max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, generator: torch.Generator | None = None,
             use_cache: bool = True, impl: str = "reference") -> Int[Tensor, "batch total"]:
    """The prompt followed by ``max_new_tokens`` sampled tokens: ``generate(model, ids, 20, temperature=0)`` is greedy.

    Without the cache every step reruns the model on the last n_ctx tokens; with it, on the new one only.
    ``impl`` picks the readable or the fused kernels for both.
    """
    _check_generation_args(max_new_tokens, temperature)
    tokens = check_tokens(prompt, model.cfg)
    was_training = model.training
    model.eval()
    cache, step_input = None, tokens
    for _ in range(max_new_tokens):
        if use_cache:
            logits, cache = forward_with_cache(model, step_input, cache, impl=impl)
        else:
            logits = model(tokens[:, -model.cfg.n_ctx:], impl=impl)
        next_id = sample_next_token(logits[:, -1], temperature, top_k, top_p, generator)  # (batch,)
        tokens = torch.cat([tokens, next_id[:, None]], dim=1)
        step_input = next_id[:, None]  # (batch, 1)
    model.train(was_training)
    return tokens
