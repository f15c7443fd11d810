"""Grouped-query attention: fewer key/value heads than query heads, each shared by a group of queries.

``n_heads`` query heads read ``n_kv_heads`` key/value heads (``n_heads`` a multiple of ``n_kv_heads``);
query head ``h`` uses key/value head ``h // (n_heads // n_kv_heads)``, so consecutive query heads form
a group (the layout of Llama 2 70B, Mistral and PyTorch's ``scaled_dot_product_attention(...,
enable_gqa=True)``). ``n_kv_heads = n_heads`` is ordinary multi-head attention and ``n_kv_heads = 1``
is multi-query attention. The point is the KV cache: it holds ``n_kv_heads`` heads per layer, not
``n_heads``. Weights in the course's per-head layout, without biases (as in Llama): ``W_Q``
(n_heads, d_model, d_head), ``W_K`` and ``W_V`` (n_kv_heads, d_model, d_head), ``W_O`` (n_heads, d_head,
d_model).
Leaves out the KV cache itself (``course_utils.gpt.kv_cache``) and rotary positions.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor, nn

from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.validate import positive_int

IMPLS = ("reference", "fused")


def repeat_kv(kv: Float[Tensor, "batch kv_head pos d_head"], n_heads: int) -> Float[Tensor, "batch head pos d_head"]:
    """Give every query head its group's key/value head: kv heads [a, b] for 4 query heads -> [a, a, b, b]."""
    if not isinstance(kv, Tensor) or kv.ndim != 4:
        shape = tuple(getattr(kv, "shape", ()))
        raise ValueError(f"kv must be a tensor of shape (batch, n_kv_heads, pos, d_head), got {shape}")
    n_heads = positive_int("n_heads", n_heads)
    if n_heads % kv.shape[1]:
        raise ValueError(f"n_heads={n_heads} must be a multiple of the {kv.shape[1]} key/value heads")
    return kv.repeat_interleave(n_heads // kv.shape[1], dim=1)  # (batch, n_heads, pos, d_head)


class GroupedQueryAttention(nn.Module):
    """``GroupedQueryAttention(d_model=8, n_heads=4, n_kv_heads=2)(x)`` maps (batch, pos, 8) to (batch, pos, 8).

    ``mask`` (torch.bool, True = may attend) is (q_pos, k_pos), (batch, q_pos, k_pos) (given a head
    axis here, e.g. ``causal_mask(T) & padding_mask(lengths, T)``) or anything that broadcasts to
    (batch, head, q_pos, k_pos). Weights are drawn uniformly in ±1/sqrt(d_model), from ``generator``
    when given. ``impl="fused"`` runs PyTorch's kernel with ``enable_gqa=True`` (no repeated copies).
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, generator: torch.Generator | None = None):
        super().__init__()
        positive_int("d_model", d_model), positive_int("n_heads", n_heads), positive_int("n_kv_heads", n_kv_heads)
        if d_model % n_heads or n_heads % n_kv_heads:
            raise ValueError(
                f"d_model={d_model} must be divisible by n_heads={n_heads}, and n_heads by n_kv_heads={n_kv_heads}"
            )
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.d_head = d_model // n_heads
        bound = 1 / math.sqrt(d_model)
        shapes = {
            "W_Q": (n_heads, d_model, self.d_head),
            "W_K": (n_kv_heads, d_model, self.d_head),
            "W_V": (n_kv_heads, d_model, self.d_head),
            "W_O": (n_heads, self.d_head, d_model),
        }
        for name, shape in shapes.items():
            self.register_parameter(name, nn.Parameter(torch.empty(shape).uniform_(-bound, bound, generator=generator)))

    def qkv(self, x: Float[Tensor, "batch pos d_model"]) -> tuple[Tensor, Tensor, Tensor]:
        """q (batch, n_heads, pos, d_head); k and v (batch, n_kv_heads, pos, d_head), not yet repeated."""
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have shape (batch, pos, d_model={self.d_model}), got {getattr(x, 'shape', type(x).__name__)}"
            )
        return tuple(torch.einsum("bpm,hmd->bhpd", x, W) for W in (self.W_Q, self.W_K, self.W_V))

    def forward(
        self, x: Float[Tensor, "batch pos d_model"], mask: Bool[Tensor, "..."] | None = None, impl: str = "reference"
    ) -> Float[Tensor, "batch pos d_model"]:
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        q, k, v = self.qkv(x)
        if isinstance(mask, Tensor) and mask.ndim == 3:
            mask = mask[:, None]  # (batch, 1, q_pos, k_pos): the same for every head
        if impl == "fused":
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        else:
            z = scaled_dot_product_attention(q, repeat_kv(k, self.n_heads), repeat_kv(v, self.n_heads), mask)
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O)  # (batch, pos, d_model): the heads' writes, summed


def kv_cache_values(n_layers: int, n_kv_heads: int, d_head: int, n_ctx: int) -> int:
    """Numbers a KV cache holds for one sequence: ``kv_cache_values(1, 2, 4, 10)`` -> 2 * 1 * 2 * 4 * 10 = 160."""
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads), ("d_head", d_head), ("n_ctx", n_ctx)):
        positive_int(name, value)
    return 2 * n_layers * n_kv_heads * d_head * n_ctx  # keys and values
