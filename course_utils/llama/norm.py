"""RMSNorm: scale each position's vector to root-mean-square 1, then by a learned gain (no mean, no bias).

Covers ``rms_norm`` (the formula) and the ``RMSNorm`` module holding the gain ``w``. Compared with
LayerNorm (``course_utils.layernorm``) it skips subtracting the mean and has no bias β: one
reduction instead of two and ``d_model`` parameters instead of ``2·d_model``; Llama, Mistral, Qwen
and OLMo use it. ε sits inside the square root. A bfloat16 or float16 input is normalised in
float32 and cast back before the gain, as Meta's Llama code and ``transformers``' ``LlamaRMSNorm``
do (the mean of squares over thousands of features is where half precision loses most).
Leaves out fused kernels and the variants that learn a bias or an offset to the gain (Gemma's 1 + w).
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor, nn

from course_utils.validate import float_tensor, non_negative_number, positive_int


def _normalise(x: Tensor, eps: float) -> Tensor:
    wide = x.to(torch.promote_types(x.dtype, torch.float32))  # float32 for half inputs, float64 stays
    mean_square = wide.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
    return (wide * torch.rsqrt(mean_square + eps)).to(x.dtype)  # (..., d_model), cast back before the gain


def rms_norm(
    x: Float[Tensor, "... d_model"], w: Float[Tensor, "d_model"] | None = None, eps: float = 1e-5
) -> Float[Tensor, "... d_model"]:
    """x / sqrt(mean(x²) + eps) · w, the mean taken over each vector's own d_model numbers.

    ``rms_norm(tensor([3., 4.]), eps=0)`` -> ``[0.8485, 1.1314]`` (the RMS of [3, 4] is sqrt(12.5)).
    """
    float_tensor("x", x, "(..., d_model)", finite=False)
    eps = non_negative_number("eps", eps)
    if x.shape[-1] == 0:
        raise ValueError(f"x must have a non-empty last dimension (d_model), got shape {tuple(x.shape)}")
    if w is not None:
        float_tensor("w", w, f"({x.shape[-1]},)", finite=False)
        if tuple(w.shape) != (x.shape[-1],):
            raise ValueError(f"w must have shape ({x.shape[-1]},) (d_model of x), got {tuple(w.shape)}")
    out = _normalise(x, eps)
    return out if w is None else out * w


class RMSNorm(nn.Module):
    """``RMSNorm(2, eps=0)(tensor([[3., 4.]]))`` -> ``[[0.8485, 1.1314]]`` (the gain ``w`` starts at 1).

    Same numbers as ``torch.nn.RMSNorm(d_model, eps)`` and ``transformers``' ``LlamaRMSNorm`` with
    the gain copied in (tested, bfloat16 included).
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model, self.eps = positive_int("d_model", d_model), non_negative_number("eps", eps)
        self.w = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        float_tensor("x", x, f"(..., d_model={self.d_model})", finite=False)
        if x.shape[-1:] != (self.d_model,):
            raise ValueError(f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}")
        return _normalise(x, self.eps) * self.w

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"
