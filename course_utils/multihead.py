"""Multi-head attention: split into heads, attend in each, merge, project with W_O.

Covers ``split_heads``/``merge_heads``, the ``MultiHeadAttention`` module (``W_Q``, ``W_K``,
``W_V``, ``W_O`` as ``nn.Linear(d_model, d_model)``; head ``h`` owns columns
``h*d_head:(h+1)*d_head`` of the merged width), its per-head view (each head's output through its
own slice of ``W_O``, which sums to the module's output), copying weights into
``torch.nn.MultiheadAttention``, and counting parameters and matmul FLOPs.
The attention itself is ``course_utils.attention.scaled_dot_product_attention``.
Leaves out grouped-query attention, KV caching and dropout.
"""

from __future__ import annotations

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from course_utils.attention import attention_pattern, scaled_dot_product_attention


def _check_n_heads(d_model: int, n_heads) -> int:
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
    return n_heads


def split_heads(x: Float[Tensor, "batch pos d_model"], n_heads: int) -> Float[Tensor, "batch head pos d_head"]:
    """Cut the last axis into ``n_heads`` slices of width d_head and move heads before positions.

    ``split_heads(torch.arange(4.).reshape(1, 1, 4), 2)`` -> ``[[[[0., 1.]], [[2., 3.]]]]`` (shape 1, 2, 1, 2).
    """
    if not isinstance(x, Tensor) or x.ndim != 3:
        raise ValueError(f"x must be a tensor of shape (batch, pos, d_model), got {getattr(x, 'shape', type(x).__name__)}")
    batch, pos, d_model = x.shape
    n_heads = _check_n_heads(d_model, n_heads)
    x = x.reshape(batch, pos, n_heads, d_model // n_heads)  # (batch, pos, head, d_head)
    return x.transpose(1, 2)  # (batch, head, pos, d_head)


def merge_heads(z: Float[Tensor, "batch head pos d_head"]) -> Float[Tensor, "batch pos d_model"]:
    """Undo ``split_heads``: put the heads' outputs side by side. ``merge_heads(split_heads(x, h))`` -> ``x``."""
    if not isinstance(z, Tensor) or z.ndim != 4:
        raise ValueError(f"z must be a tensor of shape (batch, head, pos, d_head), got {getattr(z, 'shape', type(z).__name__)}")
    batch, n_heads, pos, d_head = z.shape
    z = z.transpose(1, 2)  # (batch, pos, head, d_head)
    return z.reshape(batch, pos, n_heads * d_head)  # (batch, pos, d_model)


def _head_mask(mask: Tensor | None) -> Tensor | None:
    """A 3-d mask is (batch, q_pos, k_pos): give it a head axis so it lines up with (batch, head, q, k)."""
    if mask is not None and isinstance(mask, Tensor) and mask.ndim == 3:
        return mask[:, None]  # (batch, 1, q_pos, k_pos)
    return mask


class MultiHeadAttention(nn.Module):
    """``MultiHeadAttention(d_model=8, n_heads=2)(x)`` maps (batch, pos, 8) to (batch, pos, 8).

    ``mask`` (torch.bool, True = may attend) broadcasts to (batch, head, q_pos, k_pos); a 3-d mask
    is read as (batch, q_pos, k_pos), e.g. ``causal_mask(T) & padding_mask(lengths, T)``.
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = True):
        super().__init__()
        self.d_model, self.n_heads = d_model, _check_n_heads(d_model, n_heads)
        self.d_head = d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)
        self.W_K = nn.Linear(d_model, d_model, bias=bias)
        self.W_V = nn.Linear(d_model, d_model, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)

    def _qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, pos, d_model={self.d_model}), got {getattr(x, 'shape', type(x).__name__)}")
        return tuple(split_heads(W(x), self.n_heads) for W in (self.W_Q, self.W_K, self.W_V))  # 3 × (batch, head, pos, d_head)

    def head_outputs(self, x: Float[Tensor, "batch pos d_model"], mask: Bool[Tensor, "..."] | None = None,
                     impl: str = "reference") -> Float[Tensor, "batch head pos d_head"]:
        """Each head's attention output z, before merging."""
        q, k, v = self._qkv(x)
        return scaled_dot_product_attention(q, k, v, _head_mask(mask), impl=impl)

    def pattern(self, x: Float[Tensor, "batch pos d_model"], mask: Bool[Tensor, "..."] | None = None) -> Float[Tensor, "batch head q_pos k_pos"]:
        """The attention weights of every head."""
        q, k, _ = self._qkv(x)
        return attention_pattern(q, k, _head_mask(mask))

    def forward(self, x: Float[Tensor, "batch pos d_model"], mask: Bool[Tensor, "..."] | None = None,
                impl: str = "reference") -> Float[Tensor, "batch pos d_model"]:
        return self.W_O(merge_heads(self.head_outputs(x, mask, impl)))  # (batch, pos, d_model)

    def per_head_contributions(self, x: Float[Tensor, "batch pos d_model"], mask: Bool[Tensor, "..."] | None = None) -> Float[Tensor, "batch head pos d_model"]:
        """What each head adds: its z times its own slice of W_O. Summed over heads, plus W_O's bias, this is ``forward``."""
        z = self.head_outputs(x, mask)  # (batch, head, pos, d_head)
        W_O = self.W_O.weight.T.reshape(self.n_heads, self.d_head, self.d_model)  # (head, d_head, d_model)
        return torch.einsum("bhpd,hdm->bhpm", z, W_O)  # (batch, head, pos, d_model)


def to_torch_mha(module: MultiHeadAttention) -> nn.MultiheadAttention:
    """A ``torch.nn.MultiheadAttention`` (batch_first) holding the same weights as ``module``.

    Remember torch's boolean ``attn_mask`` means the opposite: True = *not* allowed, so pass ``~mask``.
    """
    has_bias = module.W_Q.bias is not None
    torch_mha = nn.MultiheadAttention(module.d_model, module.n_heads, bias=has_bias, batch_first=True)
    torch_mha = torch_mha.to(device=module.W_Q.weight.device, dtype=module.W_Q.weight.dtype)
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([module.W_Q.weight, module.W_K.weight, module.W_V.weight]))
        torch_mha.out_proj.weight.copy_(module.W_O.weight)
        if has_bias:
            torch_mha.in_proj_bias.copy_(torch.cat([module.W_Q.bias, module.W_K.bias, module.W_V.bias]))
            torch_mha.out_proj.bias.copy_(module.W_O.bias)
    return torch_mha


def attention_cost(d_model: int, n_heads: int, n_ctx: int, bias: bool = True) -> dict[str, int]:
    """Parameters and matmul FLOPs (2 per multiply-add) of one layer on one sequence of n_ctx tokens.

    ``attention_cost(512, 8, 1000)["params"]`` -> ``1050624``. Neither number depends on n_heads
    (d_head = d_model / n_heads), which is why many small heads cost the same as one big one.
    """
    d_head = d_model // _check_n_heads(d_model, n_heads)
    projections = 4 * 2 * n_ctx * d_model * d_model  # W_Q, W_K, W_V, W_O
    scores = n_heads * 2 * n_ctx * n_ctx * d_head  # q kᵀ in every head
    mixing = n_heads * 2 * n_ctx * n_ctx * d_head  # pattern @ v in every head
    return {"params": 4 * d_model * d_model + (4 * d_model if bias else 0),
            "projection_flops": projections, "attention_flops": scores + mixing,
            "flops": projections + scores + mixing}
