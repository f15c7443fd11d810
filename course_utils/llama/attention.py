"""Causal grouped-query attention with rotary positions: the attention of a Llama-style block.

Covers ``RotaryAttention``: notebook 05's ``GroupedQueryAttention`` (its weights ``W_Q`` (n_heads,
d_model, d_head), ``W_K``/``W_V`` (n_kv_heads, d_model, d_head), ``W_O`` (n_heads, d_head, d_model),
no biases, and ``repeat_kv``), with the queries and keys of every head rotated after the projection
(``llama.rotary``) and the causal mask of notebook 04. ``forward_cached`` takes the keys and values
of earlier positions (already rotated, ``n_kv_heads`` heads: that is what a KV cache holds), rotates
the new rows by their true positions and returns the extended keys and values with the output.
Leaves out padding masks, sliding windows, the cache's storage (``gpt.cache.KVCache``, filled by
``llama.model``) and attention biases (Qwen's).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor

from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.attention.grouped_query import IMPLS, GroupedQueryAttention, repeat_kv
from course_utils.llama.rotary import rotate_queries_keys
from course_utils.masking import causal_mask
from course_utils.positions import BASE, LAYOUTS
from course_utils.validate import one_of, positive_number


class RotaryAttention(GroupedQueryAttention):
    """``RotaryAttention(d_model=8, n_heads=4, n_kv_heads=2)(x)``: (batch, pos, 8) -> (batch, pos, 8), causal.

    ``base`` and ``layout`` are RoPE's (``"halves"``: rotate-half, as ``transformers``; or
    ``"interleaved"``). ``impl="fused"`` runs PyTorch's kernel with ``enable_gqa=True``; the two
    agree (tested). Weights drawn as ``GroupedQueryAttention`` draws them (``generator`` if given).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int,
        base: float = BASE,
        layout: str = "halves",
        generator: torch.Generator | None = None,
    ):
        super().__init__(d_model, n_heads, n_kv_heads, generator)
        if self.d_head % 2:
            raise ValueError(f"d_model // n_heads = {self.d_head} (d_head) must be even: RoPE rotates pairs")
        self.base, self.layout = positive_number("base", base), one_of("layout", layout, LAYOUTS)

    def forward(
        self, x: Float[Tensor, "batch pos d_model"], impl: str = "reference"
    ) -> Float[Tensor, "batch pos d_model"]:
        return self.forward_cached(x, impl=impl)[0]

    def forward_cached(
        self,
        x: Float[Tensor, "batch n_new d_model"],
        past_k: Float[Tensor, "batch kv_head n_past d_head"] | None = None,
        past_v: Float[Tensor, "batch kv_head n_past d_head"] | None = None,
        impl: str = "reference",
    ) -> tuple[Tensor, Tensor, Tensor]:
        """(output (batch, n_new, d_model), keys and values of all n_past + n_new positions).

        ``x`` holds the positions after the ``n_past`` cached ones; with no cache it is the whole
        sequence and this is ``forward``.
        """
        one_of("impl", impl, IMPLS)
        q, k, v = self.qkv(x)  # q (batch, head, n_new, d_head); k, v (batch, kv_head, n_new, d_head)
        n_past = self._check_past(past_k, past_v, k)
        q, k = rotate_queries_keys(q, k, n_past, self.base, self.layout)
        if n_past:
            k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)  # (batch, kv_head, n_all, d_head)
        mask = causal_mask(q.shape[2], k.shape[2], device=x.device)  # (n_new, n_all): the new rows are the last
        if impl == "fused":
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        else:
            z = scaled_dot_product_attention(q, repeat_kv(k, self.n_heads), repeat_kv(v, self.n_heads), mask)
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O), k, v  # the heads' writes, summed: (batch, n_new, d_model)

    def _check_past(self, past_k: object, past_v: object, k: Tensor) -> int:
        """The number of cached positions (0 without a cache); ``ValueError``/``TypeError`` for a bad cache."""
        if past_k is None and past_v is None:
            return 0
        expected = (k.shape[0], self.n_kv_heads, "n_past", self.d_head)
        for name, past in (("past_k", past_k), ("past_v", past_v)):
            if not isinstance(past, Tensor):
                got = type(past).__name__
                raise TypeError(f"{name} must be a tensor of shape {expected} (or both None), got {got}")
            if past.ndim != 4 or past.shape[:2] != k.shape[:2] or past.shape[3] != self.d_head:
                raise ValueError(f"{name} must have shape {expected}, got {tuple(past.shape)}")
            if past.dtype != k.dtype or past.device != k.device:
                raise TypeError(f"{name} must be {k.dtype} on {k.device} like x, got {past.dtype} on {past.device}")
        if past_k.shape[2] != past_v.shape[2]:
            raise ValueError(
                f"past_k and past_v must hold as many positions, got {past_k.shape[2]} and {past_v.shape[2]}"
            )
        return past_k.shape[2]
