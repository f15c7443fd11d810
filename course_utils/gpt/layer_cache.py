"""The KV cache as notebook 09's own modules take it: one ``LayerCache`` per attention layer, handed down
``forward(..., cache)`` from the model to each block to its attention.

Covers ``LayerCache`` (one layer's keys and values so far, each (batch, head, pos, d_head); None before the
first call), ``new_cache`` (one per layer), ``CachedAttention`` and ``CachedBlock`` (notebook 05's attention
and a pre-norm block whose ``forward(x, cache=None)`` runs the new positions after the cached ones, storing
the new keys and values in the cache; without one, plain causal attention), ``CachedGPT`` (the course ``GPT``
whose ``forward(tokens, cache)`` does the same for the whole model, so ``model(prompt, cache)`` then
``model(token, cache)`` gives one forward's logits over the whole sequence, tested) and ``cached_sample``,
the sampling loop that drives such a model. They are the references of notebook 09's class exercises and the
model its sampler exercise drives. Leaves out the course's own cache (``KVCache``, ``generation``), the fused
path and a cache that slides past n_ctx.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from course_utils.attention.multihead import MultiHeadAttention
from course_utils.gpt.config import GPTConfig, check_tokens
from course_utils.gpt.kv_cache import cached_attention, project_qkv, write_heads
from course_utils.gpt.model import GPT
from course_utils.layernorm import LayerNorm
from course_utils.mlp import MLP
from course_utils.sampling import sample_next_token
from course_utils.validate import positive_int


@dataclass
class LayerCache:
    """One attention layer's keys ``k`` and values ``v`` so far, each (batch, head, pos, d_head); None at first."""

    k: Tensor | None = None
    v: Tensor | None = None

    @property
    def length(self) -> int:
        """How many positions are cached."""
        return 0 if self.k is None else self.k.shape[2]


def new_cache(n_layers: int) -> list[LayerCache]:
    """An empty cache for a model of ``n_layers`` blocks: ``model(prompt, new_cache(cfg.n_layers))``."""
    return [LayerCache() for _ in range(positive_int("n_layers", n_layers))]


def _check_layer_cache(cache) -> None:
    if cache is not None and not isinstance(cache, LayerCache):
        raise TypeError(f"cache must be a LayerCache or None, got {type(cache).__name__}")


class CachedAttention(MultiHeadAttention):
    """Causal multi-head attention; ``forward(x, cache)`` treats x as the positions after the cached ones."""

    def __init__(self, cfg: GPTConfig):
        super().__init__(cfg.d_model, cfg.n_heads, bias=cfg.bias)

    def forward(self, x: Float[Tensor, "batch n_new d_model"], cache: LayerCache | None = None):
        _check_layer_cache(cache)
        q, k, v = project_qkv(self, x)  # each (batch, head, n_new, d_head)
        z, k_all, v_all = cached_attention(q, k, v, *((None, None) if cache is None else (cache.k, cache.v)))
        if cache is not None:
            cache.k, cache.v = k_all, v_all
        return write_heads(self, z)  # (batch, n_new, d_model)


class CachedBlock(nn.Module):
    """A pre-norm block (``model.Block``'s parameter names) whose attention takes the layer's cache."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1, self.attn = LayerNorm(cfg.d_model, cfg.ln_eps, cfg.bias), CachedAttention(cfg)
        self.ln2 = LayerNorm(cfg.d_model, cfg.ln_eps, cfg.bias)
        self.mlp = MLP(cfg.d_model, cfg.d_mlp, activation=cfg.activation, bias=cfg.bias)

    def forward(self, x: Float[Tensor, "batch n_new d_model"], cache: LayerCache | None = None):
        x = x + self.attn(self.ln1(x), cache)
        return x + self.mlp(self.ln2(x))


def _cache_start(cache, cfg: GPTConfig, n_new: int) -> int:
    """The position the new tokens start at, after checking the cache against the model."""
    if not isinstance(cache, (list, tuple)) or len(cache) != cfg.n_layers:
        raise TypeError(f"cache must be a list of {cfg.n_layers} LayerCache (new_cache(n_layers)), got {cache!r:.60}")
    for layer in cache:
        _check_layer_cache(layer)
    if len({id(layer) for layer in cache}) < len(cache):
        raise ValueError("every layer needs its own LayerCache ([LayerCache()] * n puts one object in every slot): "
                         "use new_cache(n_layers)")
    start = cache[0].length
    if start + n_new > cfg.n_ctx:
        raise ValueError(f"the cache holds {start} positions and {n_new} more would pass the context n_ctx={cfg.n_ctx}")
    return start


class CachedGPT(GPT):
    """The course GPT whose ``forward(tokens, cache)`` runs the tokens after the cache's positions."""

    def forward(self, tokens: Int[Tensor, "batch n_new"], cache: list[LayerCache] | None = None,
                impl: str = "reference") -> Float[Tensor, "batch n_new d_vocab"]:
        if cache is None:
            return super().forward(tokens, impl=impl)
        tokens = check_tokens(tokens, self.cfg)
        x = self.embed(tokens, start=_cache_start(cache, self.cfg, tokens.shape[1]))  # (batch, n_new, d_model)
        for block, layer in zip(self.blocks, cache):
            x = x + CachedAttention.forward(block.attn, block.ln1(x), layer)
            x = x + block.mlp(block.ln2(x))
        return self.unembed(x)


@torch.no_grad()
def cached_sample(model: nn.Module, prompt: Int[Tensor, "batch pos"], n_new: int, temperature: float,
                  generator: torch.Generator | None = None) -> Int[Tensor, "batch total"]:
    """The prompt and ``n_new`` tokens from a model called as ``model(tokens, cache)`` (a ``CachedGPT`` or notebook
    09's ``SmallGPT``, driven in notebook 11): the prompt once, then each drawn token but the last; ``generate``'s
    tokens (tested)."""
    positive_int("n_new", n_new)
    cache, ids = new_cache(model.cfg.n_layers), prompt
    logits = model(prompt, cache)  # (batch, pos, d_vocab)
    for i in range(n_new):
        token = sample_next_token(logits[:, -1], temperature, generator=generator)  # (batch,)
        ids = torch.cat([ids, token[:, None]], dim=1)
        if i < n_new - 1:
            logits = model(token[:, None], cache)
    return ids
