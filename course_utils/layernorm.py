"""Layer normalisation, written out, and batch normalisation beside it for contrast.

Covers ``layer_norm`` (each position's vector on its own: subtract its mean, divide by its standard
deviation, then scale by ``w`` and shift by ``b``), the ``LayerNorm`` module holding ``w``/``b``
(TransformerLens's names for γ/β; oracle ``torch.nn.LayerNorm``), ``batch_norm`` (the statistics
taken across the batch instead, training-mode, no running averages) and ``norm_stats`` for the
worked example. Leaves out RMSNorm, running statistics and fused kernels.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor, nn

from course_utils.validate import float_tensor, non_negative_number, positive_int


def _check_x(x) -> Tensor:
    float_tensor("x", x, "(..., d_model)", finite=False)
    if x.shape[-1] == 0:
        raise ValueError(f"x must have a non-empty last dimension (d_model), got shape {tuple(x.shape)}")
    return x


def norm_stats(x: Float[Tensor, "... d_model"]) -> tuple[Tensor, Tensor]:
    """Mean and (biased) variance over the last axis: ``norm_stats(tensor([2., 4., 6., 8.]))`` -> ``(5., 5.)``."""
    return _norm_stats(_check_x(x))


def _norm_stats(x: Tensor) -> tuple[Tensor, Tensor]:
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # (..., 1), divide by d_model, not d_model - 1
    return mean, var


def layer_norm(
    x: Float[Tensor, "... d_model"],
    w: Float[Tensor, "d_model"] | None = None,
    b: Float[Tensor, "d_model"] | None = None,
    eps: float = 1e-5,
) -> Float[Tensor, "... d_model"]:
    """(x - μ) / sqrt(σ² + eps) · w + b, with μ, σ² taken over each vector's own d_model numbers.

    ``layer_norm(tensor([2., 4., 6., 8.]), eps=0)`` -> ``[-1.342, -0.447, 0.447, 1.342]``.
    """
    x, eps = _check_x(x), non_negative_number("eps", eps)
    for name, p in (("w", w), ("b", b)):
        if p is not None and (not isinstance(p, Tensor) or tuple(p.shape) != (x.shape[-1],)):
            raise ValueError(
                f"{name} must be a tensor of shape ({x.shape[-1]},), got {getattr(p, 'shape', type(p).__name__)}"
            )
    mean, var = _norm_stats(x)
    out = (x - mean) / torch.sqrt(var + eps)  # (..., d_model), mean 0 and variance 1 per vector
    if w is not None:
        out = out * w
    return out if b is None else out + b


def batch_norm(x: Float[Tensor, "batch d_model"], eps: float = 1e-5) -> Float[Tensor, "batch d_model"]:
    """Normalise each feature across the batch (axis 0), as batch norm does in training mode.

    ``batch_norm(tensor([[1.], [3.]]), eps=0)`` -> ``[[-1.], [1.]]``: a row's output depends on the others.
    """
    x, eps = _check_x(x), non_negative_number("eps", eps)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"x must have shape (batch >= 2, d_model), got {tuple(x.shape)}")
    mean = x.mean(dim=0, keepdim=True)  # (1, d_model)
    var = ((x - mean) ** 2).mean(dim=0, keepdim=True)  # (1, d_model)
    return (x - mean) / torch.sqrt(var + eps)


class LayerNorm(nn.Module):
    """``LayerNorm(4)(tensor([[2., 4., 6., 8.]]))`` -> ``[[-1.342, -0.447, 0.447, 1.342]]`` (w = 1, b = 0 at init).

    ``w`` (γ) and ``b`` (β) are learned, one per feature; ``bias=False`` leaves ``b`` out. Same
    numbers as ``torch.nn.LayerNorm(d_model, eps)`` with its weight and bias copied in.
    """

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        self.d_model, self.eps = positive_int("d_model", d_model), non_negative_number("eps", eps)
        self.w = nn.Parameter(torch.ones(d_model))
        self.b = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        if not isinstance(x, Tensor) or x.shape[-1:] != (self.d_model,):
            raise ValueError(
                f"x must have last dimension d_model={self.d_model}, got {getattr(x, 'shape', type(x).__name__)}"
            )
        return nn.functional.layer_norm(x, (self.d_model,), self.w, self.b, self.eps)  # tested equal to layer_norm

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}, bias={self.b is not None}"
