"""Softmax, the function that turns a row of scores into probabilities.

Covers the numerically stable softmax used everywhere in the course, its masked form, and
``row_entropy``, the entropy of its output rows (with 0·log 0 = 0), shared by attention patterns
and next-token distributions. Temperature, sampling and masking build on it in later modules;
this one stays small on purpose.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor

from course_utils.masking import validate_mask
from course_utils.validate import float_tensor


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


def masked_softmax(
    scores: Float[Tensor, "... k_pos"], mask: Tensor | None, dim: int = -1
) -> Float[Tensor, "... k_pos"]:
    """Softmax over the positions ``mask`` allows (``True`` = may attend), zero elsewhere.

    ``masked_softmax(tensor([1., 2.]), tensor([True, False]))`` -> ``tensor([1., 0.])``.
    Setting masked scores to -inf before the softmax is the same as renormalising the allowed
    weights. A row with nothing allowed has no distribution to return: it comes back as all
    zeros (documented and tested), never NaN. ``mask`` broadcasts against ``scores``.
    """
    if not isinstance(scores, torch.Tensor) or not scores.is_floating_point():
        raise TypeError(
            f"scores must be a floating-point torch.Tensor, got {getattr(scores, 'dtype', type(scores).__name__)}"
        )
    if mask is None:
        return softmax(scores, dim=dim)
    mask = validate_mask(mask, scores.shape).to(scores.device)  # bool, broadcast to the scores' shape
    return masked_softmax_(scores.masked_fill(~mask, float("-inf")), None, dim=dim)


def masked_softmax_(
    scores: Float[Tensor, "... k_pos"], mask: Tensor | None, dim: int = -1
) -> Float[Tensor, "... k_pos"]:
    """``masked_softmax`` computed in place in ``scores`` (a buffer the caller owns), inputs unchecked.

    One pass per step and no temporary as large as ``scores``: fill the masked entries with -inf,
    take each row's max (0 for a row with nothing allowed, so no inf - inf), subtract and exponentiate
    in place (masked entries become exp(-inf) = 0), then divide by the row sums, clamped to the
    smallest float so an empty row stays all zeros instead of 0/0 = NaN. Used on the internal
    scores of attention; ``mask`` must already be a bool tensor that broadcasts to ``scores``.
    When autograd is recording, the same steps run out of place (backward needs their results).
    """
    grad = scores.requires_grad and torch.is_grad_enabled()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if grad else scores.masked_fill_(~mask, float("-inf"))
    row_max = scores.amax(dim=dim, keepdim=True).detach().nan_to_num(0.0, neginf=0.0)  # empty rows: 0
    exps = (scores - row_max).exp() if grad else scores.sub_(row_max).exp_()
    total = exps.sum(dim=dim, keepdim=True).clamp_min(torch.finfo(scores.dtype).tiny)
    return exps / total if grad else exps.div_(total)


def row_entropy(p: Float[Tensor, "... n"], dim: int = -1) -> Float[Tensor, "..."]:
    """Entropy in nats along ``dim``, with 0·log 0 = 0: ``row_entropy(tensor([0.5, 0.5]))`` -> ``0.693``.

    log(n) for a uniform row, 0 for a one-hot row and for an all-zero (fully masked) row. Checks the
    type only: callers check the values (``sampling.entropy`` wants real distributions).
    """
    float_tensor("p", p, finite=False)
    logs = torch.where(p > 0, p.log(), torch.zeros_like(p))  # 0·log 0 = 0, never 0·(-inf) = NaN
    return -(p * logs).sum(dim=dim)
