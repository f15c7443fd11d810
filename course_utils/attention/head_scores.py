"""Scores that name what a head of a trained model does, beyond notebook 05's previous-token score.

``delimiter_scores`` is the share of each head's attention that lands on delimiter tokens (a
newline, say); ``chance_delimiter_share`` is the share a head attending uniformly over the allowed
(causal) keys would give them. A head far above chance is a "delimiter head": it looks back to the
start of the current line. ``top_head`` picks the highest-scoring head of a model from per-layer scores.
Leaves out causal tests (ablations, ``course_utils.gpt.ablation``); these only describe patterns.
"""

from __future__ import annotations

import torch
from jaxtyping import Bool, Float
from torch import Tensor


def _check(pattern, is_delimiter) -> None:
    if not isinstance(pattern, Tensor) or pattern.ndim != 4:
        raise ValueError(
            f"pattern must be (batch, head, q_pos, k_pos), got {getattr(pattern, 'shape', type(pattern).__name__)}"
        )
    if (
        not isinstance(is_delimiter, Tensor)
        or is_delimiter.dtype != torch.bool
        or tuple(is_delimiter.shape) != (pattern.shape[0], pattern.shape[-1])
    ):
        raise ValueError(
            "is_delimiter must be a torch.bool tensor of shape "
            f"(batch, k_pos) = {(pattern.shape[0], pattern.shape[-1])}"
        )


def delimiter_scores(
    pattern: Float[Tensor, "batch head q_pos k_pos"], is_delimiter: Bool[Tensor, "batch k_pos"]
) -> Float[Tensor, "head"]:
    """Mean over sequences and queries of the weight on delimiter keys.

    A head that always looks at the one newline scores 1; one that never does scores 0.
    """
    _check(pattern, is_delimiter)
    weight = (pattern * is_delimiter[:, None, None, :].to(pattern.dtype)).sum(-1)  # (batch, head, q_pos)
    return weight.mean(dim=(0, -1))


def chance_delimiter_share(is_delimiter: Bool[Tensor, "batch k_pos"]) -> float:
    """What uniform causal attention would give delimiters: mean over queries q of (delimiters in 0..q) / (q + 1)."""
    if not isinstance(is_delimiter, Tensor) or is_delimiter.dtype != torch.bool or is_delimiter.ndim != 2:
        raise ValueError("is_delimiter must be a 2-d torch.bool tensor (batch, k_pos)")
    seen = is_delimiter.double().cumsum(-1)  # (batch, q_pos): delimiters at or before each query
    return float((seen / torch.arange(1, is_delimiter.shape[1] + 1)).mean())


def top_head(scores: list[Tensor], tie: float = 1e-6) -> tuple[int, int]:
    """``(layer, head)`` of the highest score in ``scores`` (one ``(head,)`` tensor per layer).

    Scores within ``tie`` of the highest count as tied, and the first in (layer, head) order wins, so
    rounding cannot pick another head on another machine: ``top_head([tensor([0.1, 0.5]), tensor([0.5, 0.2])])``
    -> ``(0, 1)``.
    """
    if not isinstance(scores, (list, tuple)) or not scores or not all(
        isinstance(s, Tensor) and s.ndim == 1 and s.numel() > 0 for s in scores
    ):
        raise ValueError("scores must be a non-empty list of 1-d (head,) tensors, one per layer")
    best = max(float(s.max()) for s in scores)
    return next((layer, head) for layer, s in enumerate(scores) for head, v in enumerate(s.tolist()) if v >= best - tie)
