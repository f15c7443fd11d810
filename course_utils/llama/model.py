"""A Llama-style decoder, written to be read: the block every open model of 2024 uses, and the model.

Covers ``LlamaBlock`` (pre-norm: ``x + attn(norm1(x))``, then ``+ mlp(norm2(·))``, with RMSNorm,
causal grouped-query attention with RoPE and a SwiGLU MLP) and ``Llama`` (token embedding ``W_E``,
the blocks, a final RMSNorm and an untied unembedding ``W_U``; no position table: RoPE places the
tokens inside attention). Against notebook 09's GPT-2 block: RMSNorm for LayerNorm, rotary for
learned positions, SwiGLU for GELU, n_kv_heads ≤ n_heads, no biases, untied unembedding.
``Llama(cfg)(tokens, cache)`` with a ``gpt.cache.KVCache`` runs only the new tokens, at positions
after the cached ones, and stores every layer's rotated keys and values in the cache: incremental
decoding gives the logits of the full forward (tested). Initialisation: attention as notebook 05's
``GroupedQueryAttention`` draws it, the rest normal with std 0.02; RMSNorm gains start at 1;
``reset_parameters`` redraws everything with notebook 09's recipe (``gpt.model.initialise``).
Leaves out sampling (``course_utils.sampling``), training, and ``transformers``' weights
(``llama.transformers_weights``). The code follows its input's device; build, then ``.to()``.
"""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from course_utils.gpt.cache import KVCache
from course_utils.gpt.model import initialise
from course_utils.llama.attention import RotaryAttention
from course_utils.llama.config import LlamaConfig
from course_utils.llama.norm import RMSNorm
from course_utils.moe.layer import SwiGLU
from course_utils.validate import index_tensor, non_negative_number


def _check_config(cfg: object) -> LlamaConfig:
    if not isinstance(cfg, LlamaConfig):
        raise TypeError(f"cfg must be a LlamaConfig, got {type(cfg).__name__}")
    return cfg


class LlamaBlock(nn.Module):
    """``LlamaBlock(cfg)(x)``: (batch, pos, d_model) -> the same, causal; ``forward_cached`` with a layer's cache."""

    def __init__(self, cfg: LlamaConfig, generator: torch.Generator | None = None):
        super().__init__()
        cfg = _check_config(cfg)
        self.norm1 = RMSNorm(cfg.d_model, cfg.eps)
        self.attn = RotaryAttention(cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.rope_base, cfg.rope_layout, generator)
        self.norm2 = RMSNorm(cfg.d_model, cfg.eps)
        self.mlp = SwiGLU(cfg.d_model, cfg.mlp_width, generator=generator)

    def forward(
        self, x: Float[Tensor, "batch pos d_model"], impl: str = "reference"
    ) -> Float[Tensor, "batch pos d_model"]:
        return self.forward_cached(x, impl=impl)[0]

    def forward_cached(
        self,
        x: Float[Tensor, "batch n_new d_model"],
        past_k: Tensor | None = None,
        past_v: Tensor | None = None,
        impl: str = "reference",
    ) -> tuple[Tensor, Tensor, Tensor]:
        """(the residual stream after the block, the layer's keys and values of all positions so far)."""
        attn_out, k, v = self.attn.forward_cached(self.norm1(x), past_k, past_v, impl)
        x = x + attn_out  # (batch, n_new, d_model)
        return x + self.mlp(self.norm2(x)), k, v


class Llama(nn.Module):
    """Tokens -> logits: ``Llama(LlamaConfig(50, 16, 32, 2, 4))(torch.tensor([[1, 2, 3]])).shape`` -> (1, 3, 50)."""

    def __init__(self, cfg: LlamaConfig, generator: torch.Generator | None = None):
        super().__init__()
        self.cfg = cfg = _check_config(cfg)
        self.W_E = nn.Parameter(torch.randn(cfg.d_vocab, cfg.d_model, generator=generator) * 0.02)
        self.blocks = nn.ModuleList(LlamaBlock(cfg, generator) for _ in range(cfg.n_layers))
        self.norm_final = RMSNorm(cfg.d_model, cfg.eps)
        self.W_U = nn.Parameter(torch.randn(cfg.d_model, cfg.d_vocab, generator=generator) * 0.02)

    def reset_parameters(self, generator: torch.Generator | None = None, init_std: float = 0.02) -> None:
        """Notebook 09's recipe (``gpt.model.initialise``): gains 1, ``W_O``/``W_out`` at init_std/sqrt(2·n_layers),
        the rest at ``init_std``, in sorted-name order, so a comparison with ``GPT`` starts both alike."""
        initialise(self, non_negative_number("init_std", init_std), self.cfg.n_layers, generator)

    def forward(
        self, tokens: Int[Tensor, "batch pos"], cache: KVCache | None = None, impl: str = "reference"
    ) -> Float[Tensor, "batch pos d_vocab"]:
        """Logits of every position of ``tokens``; with ``cache``, ``tokens`` follow the cached positions
        and the cache is extended in place (an empty ``KVCache()`` starts one)."""
        start = self._check_inputs(tokens, cache)
        x = self.W_E[tokens.to(self.W_E.device)]  # (batch, pos, d_model)
        for layer, block in enumerate(self.blocks):
            past = (cache.keys[layer], cache.values[layer]) if start else (None, None)
            x, k, v = block.forward_cached(x, *past, impl=impl)
            if cache is not None and start:
                cache.keys[layer], cache.values[layer] = k, v
            elif cache is not None:
                cache.keys.append(k), cache.values.append(v)
        return self.norm_final(x) @ self.W_U  # (batch, pos, d_vocab)

    def _check_inputs(self, tokens: object, cache: object) -> int:
        """The number of cached positions; ``ValueError``/``TypeError`` naming what is wrong."""
        index_tensor("tokens", tokens, self.cfg.d_vocab)
        if tokens.ndim != 2 or tokens.shape[1] == 0:
            raise ValueError(f"tokens must have shape (batch, pos) with pos >= 1, got {tuple(tokens.shape)}")
        if cache is None:
            start = 0
        elif not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a course_utils.gpt.cache.KVCache (or None), got {type(cache).__name__}")
        elif len(cache.keys) not in (0, self.cfg.n_layers) or len(cache.values) != len(cache.keys):
            raise ValueError(
                f"cache must be empty or hold keys and values of all n_layers={self.cfg.n_layers} layers, "
                f"got {len(cache.keys)} keys and {len(cache.values)} values"
            )
        else:
            start = cache.length
            if start and cache.keys[0].shape[0] != tokens.shape[0]:
                raise ValueError(f"cache holds a batch of {cache.keys[0].shape[0]}, tokens {tokens.shape[0]}")
        if start + tokens.shape[1] > self.cfg.n_ctx:
            raise ValueError(
                f"{start} cached + {tokens.shape[1]} new positions exceed n_ctx={self.cfg.n_ctx}"
            )
        return start
