"""Generating text with the small GPT: the sampling loop, and the same loop with a KV cache.

Covers ``generate`` (run the model, turn the last position's logits into the next token with
notebook 04's ``sample_next_token``: greedy at temperature 0, else temperature, top-k, top-p; append;
repeat), ``cached_attention`` (one attention step that appends the new keys and values to the cache
and lets the new queries look at everything so far) and ``forward_with_cache`` (the model run on
new tokens only, reusing every earlier position's K and V). With the cache each new token costs one
position's work instead of the whole sequence's, and the tokens are the same (tested).
``impl="fused"`` is the fast version of the same loop: Q, K and V in one matmul, PyTorch's SDPA, K and
V written in place into buffers allocated once, the weights gathered once per call and the checks
done once in ``generate``: at this model's size a step's cost is mostly per-call overhead.
Leaves out beam search, batched prompts of different lengths and a cache that slides past n_ctx.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.attention import scaled_dot_product_attention
from course_utils.gpt import GPT
from course_utils.gpt_config import check_tokens
from course_utils.gpt_fused import _ACTIVATIONS, _linear, _qkv_weight
from course_utils.masking import causal_mask
from course_utils.multihead import MultiHeadAttention
from course_utils.sampling import sample_next_token


@dataclass
class KVCache:
    """Per layer, the keys and values of every position seen so far, each (batch, head, pos, d_head).

    The fused path (``impl="fused"``) keeps them in buffers allocated ahead (``keys[layer]`` is then
    a view of the filled part), so a step writes its new position in place instead of copying the
    whole cache with ``torch.cat``; a cache reused for two different continuations gets a copy.
    """

    keys: list[Tensor] = field(default_factory=list)
    values: list[Tensor] = field(default_factory=list)
    _buffers: "_Buffers | None" = field(default=None, repr=False, compare=False)

    @property
    def length(self) -> int:
        return 0 if not self.keys else self.keys[0].shape[2]


class _Buffers:
    """K and V storage of every layer, (batch, head, capacity, d_head) each; ``filled`` positions hold data."""

    __slots__ = ("keys", "values", "filled")

    def __init__(self, keys: list[Tensor], values: list[Tensor], filled: int):
        self.keys, self.values, self.filled = keys, values, filled

    @property
    def capacity(self) -> int:
        return self.keys[0].shape[2]

    @classmethod
    def allocate(cls, model: GPT, batch: int, capacity: int, like: Tensor, cache: KVCache | None = None) -> "_Buffers":
        """Empty buffers for ``capacity`` positions on ``like``'s device and dtype, holding a copy of ``cache``."""
        cfg = model.cfg
        shape = (batch, cfg.n_heads, capacity, cfg.d_head)
        keys = [torch.empty(shape, dtype=like.dtype, device=like.device) for _ in range(cfg.n_layers)]
        values = [torch.empty(shape, dtype=like.dtype, device=like.device) for _ in range(cfg.n_layers)]
        filled = 0 if cache is None else cache.length
        for old, new in zip((*cache.keys, *cache.values) if filled else (), (*keys, *values)):
            new[:, :, :filled] = old
        return cls(keys, values, filled)

    def view(self, end: int) -> KVCache:
        """A ``KVCache`` of the first ``end`` positions, sharing this storage."""
        return KVCache([k[:, :, :end] for k in self.keys], [v[:, :, :end] for v in self.values], self)


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


def _check_cache_args(model: GPT, impl: str) -> None:
    if impl not in ("reference", "fused"):
        raise ValueError(f"impl must be 'reference' or 'fused', got {impl!r}")
    if model.cfg.norm != "pre":
        raise ValueError("forward_with_cache is written for pre-norm models")


def _context_error(start: int, n_new: int, n_ctx: int) -> ValueError:
    return ValueError(
        f"the cache holds {start} positions and {n_new} more would pass the context "
        f"n_ctx={n_ctx}; generate with use_cache=False to slide the window"
    )


@torch.no_grad()
def forward_with_cache(
    model: GPT, tokens: Int[Tensor, "batch n_new"], cache: KVCache | None = None, impl: str = "reference"
):
    """Logits for ``tokens`` placed after the ``cache.length`` positions already cached; returns ``(logits, cache)``.

    ``impl="fused"`` runs the same step through PyTorch's kernels (one matmul for Q, K and V, SDPA)
    and writes the new keys and values into buffers allocated ahead instead of concatenating.
    """
    _check_cache_args(model, impl)
    cache = KVCache() if cache is None else cache
    start = cache.length
    tokens = check_tokens(tokens, model.cfg)
    batch, n_new = tokens.shape
    if start + n_new > model.cfg.n_ctx:
        raise _context_error(start, n_new, model.cfg.n_ctx)
    if start and cache.keys[0].shape[0] != batch:
        raise ValueError(f"the cache holds {cache.keys[0].shape[0]} sequences but tokens has {batch} rows")
    if impl == "reference":
        return _reference_step(model, tokens, cache)
    x = model.embed(tokens, start=start)  # (batch, n_new, d_model)
    buffers = _buffers_for(model, cache, batch, start + n_new, x)
    x = _fused_cached_blocks(_fused_layers(model), x, buffers, start, model.cfg.n_heads)
    return _final_logits(model, x), buffers.view(start + n_new)


def _check_generation_args(max_new_tokens, temperature) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 means greedy), got {temperature}")


def generate(
    model: GPT,
    prompt: Int[Tensor, "batch pos"],
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
    impl: str = "reference",
) -> Int[Tensor, "batch total"]:
    """The prompt followed by ``max_new_tokens`` sampled tokens: ``generate(model, ids, 20, temperature=0)`` is greedy.

    Without the cache every step reruns the model on the last n_ctx tokens; with it, on the new one only.
    ``impl`` picks the readable or the fused kernels for both. The arguments are checked once, here
    (the steps then run on tokens the model made itself), and the loop runs in ``torch.inference_mode``.
    """
    _check_generation_args(max_new_tokens, temperature)
    tokens = check_tokens(prompt, model.cfg)
    if use_cache:
        _check_cache_args(model, impl)
    elif impl not in ("reference", "fused"):
        raise ValueError(f"impl must be 'reference' or 'fused', got {impl!r}")
    if max_new_tokens == 0:
        return tokens
    n_prompt, n_ctx = tokens.shape[1], model.cfg.n_ctx
    if use_cache and n_prompt + max_new_tokens - 1 > n_ctx:  # the last new token is sampled, never fed back
        raise ValueError(
            f"the prompt ({n_prompt} tokens) and {max_new_tokens} new tokens need "
            f"{n_prompt + max_new_tokens - 1} cached positions, more than the context n_ctx={n_ctx}; "
            "generate with use_cache=False to slide the window"
        )
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            out = _sampling_loop(
                model,
                tokens,
                max_new_tokens,
                use_cache,
                impl,
                lambda logits: sample_next_token(logits, temperature, top_k, top_p, generator),
            )
    finally:
        model.train(was_training)
    return out.clone()  # an ordinary tensor again: one made in inference mode cannot be saved for a backward pass


def _sampling_loop(
    model: GPT, tokens: Int[Tensor, "batch n_prompt"], max_new_tokens: int, use_cache: bool, impl: str, sample
) -> Int[Tensor, "batch total"]:
    """``generate``'s loop on checked arguments: logits of the last position -> ``sample`` -> written into ``out``."""
    (batch, n_prompt), n_ctx = tokens.shape, model.cfg.n_ctx
    total = n_prompt + max_new_tokens
    out = torch.empty(batch, total, dtype=torch.int64, device=tokens.device)  # the prompt, then the new tokens
    out[:, :n_prompt] = tokens
    if use_cache and impl == "fused":
        layers, n_heads = _fused_layers(model), model.cfg.n_heads
        buffers = _Buffers.allocate(model, batch, total - 1, model.W_E)  # room for every position fed back

        def next_logits(start: int, end: int) -> Tensor:
            x = _fused_cached_blocks(layers, model.embed(out[:, start:end], start=start), buffers, start, n_heads)
            return _final_logits(model, x[:, -1])
    elif use_cache:
        cache = KVCache()

        def next_logits(start: int, end: int) -> Tensor:
            nonlocal cache
            logits, cache = _reference_step(model, out[:, start:end], cache)
            return logits[:, -1]
    else:

        def next_logits(start: int, end: int) -> Tensor:
            return model(out[:, max(0, end - n_ctx) : end], impl=impl)[:, -1]  # the whole window, every step

    start = 0
    for end in range(n_prompt, total):
        out[:, end] = sample(next_logits(start, end))  # (batch,) new token ids
        start = end  # with the cache, only the token just sampled is new
    return out
