"""Softmax, the function that turns a row of scores into probabilities.

Covers the numerically stable softmax used everywhere in the course. Temperature, sampling and
masking build on it in later modules; this one stays small on purpose.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor


def softmax(x: Float[Tensor, "... n"], dim: int = -1) -> Float[Tensor, "... n"]:
    """Stable softmax along ``dim``: ``softmax(tensor([0., 0.]))`` -> ``tensor([0.5, 0.5])``.

    Subtracting the maximum first leaves the result unchanged (it cancels between numerator and
    denominator) but keeps ``exp`` from overflowing, so logits of 10,000 give no inf or NaN.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension, got a 0-d tensor")
    shifted = x - x.amax(dim=dim, keepdim=True)
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)
