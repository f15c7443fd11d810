"""Attention masks: which keys each query may look at.

Every mask here is a ``torch.bool`` tensor with ``True`` = may attend, shaped (or broadcastable to)
``(..., q_pos, k_pos)``, the convention ``course_utils.softmax.masked_softmax`` and
``course_utils.attention`` use. Covers causal, padding, sliding-window, prefix-LM and
block-diagonal (packed documents) masks, combining them, validating a mask against a score shape,
and finding rows with nothing allowed. Leaves out additive float masks and attention sinks.
"""

from __future__ import annotations

from typing import Sequence

import torch
from jaxtyping import Bool
from torch import Tensor


def _positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def causal_mask(n_q: int, n_k: int | None = None, *, device=None) -> Bool[Tensor, "q_pos k_pos"]:
    """Lower-triangular mask: ``causal_mask(3)`` -> ``[[T, F, F], [T, T, F], [T, T, T]]``.

    With ``n_k > n_q`` the queries are the last ``n_q`` positions (as when earlier keys are cached),
    so query ``i`` may see keys ``0 .. i + n_k - n_q``.
    """
    n_q = _positive_int(n_q, "n_q")
    n_k = n_q if n_k is None else _positive_int(n_k, "n_k")
    if n_k < n_q:
        raise ValueError(f"n_k must be >= n_q (queries are the last n_q positions), got n_q={n_q}, n_k={n_k}")
    return torch.ones(n_q, n_k, dtype=torch.bool, device=device).tril(diagonal=n_k - n_q)


def padding_mask(lengths: Sequence[int] | Tensor, n_ctx: int, *, device=None) -> Bool[Tensor, "batch 1 k_pos"]:
    """Hide padding keys: ``padding_mask([2], 3)`` -> ``[[[T, T, F]]]`` (shape batch × 1 × k_pos).

    Sequence ``b`` holds ``lengths[b]`` real tokens followed by padding. The middle axis of size 1
    broadcasts over query positions; combine with ``causal_mask`` using ``&``.
    """
    n_ctx = _positive_int(n_ctx, "n_ctx")
    lengths = torch.as_tensor(lengths, device=device)
    if lengths.ndim != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise TypeError(f"lengths must be a 1-d sequence of ints, got dtype {lengths.dtype} and shape {tuple(lengths.shape)}")
    if (lengths < 1).any() or (lengths > n_ctx).any():
        raise ValueError(f"every length must be in 1..n_ctx={n_ctx}, got {lengths.tolist()}")
    positions = torch.arange(n_ctx, device=device)
    return (positions[None, :] < lengths[:, None])[:, None, :]  # (batch, 1, k_pos)


def sliding_window_mask(n_ctx: int, window: int, *, device=None) -> Bool[Tensor, "q_pos k_pos"]:
    """Causal, but only the last ``window`` keys: ``sliding_window_mask(3, 2)`` -> ``[[T,F,F],[T,T,F],[F,T,T]]``."""
    n_ctx = _positive_int(n_ctx, "n_ctx")
    window = _positive_int(window, "window")
    q = torch.arange(n_ctx, device=device)[:, None]
    k = torch.arange(n_ctx, device=device)[None, :]
    return (k <= q) & (q - k < window)


def prefix_lm_mask(n_ctx: int, prefix_len: int, *, device=None) -> Bool[Tensor, "q_pos k_pos"]:
    """Every query sees the whole prefix, then causal: ``prefix_lm_mask(3, 2)`` -> ``[[T,T,F],[T,T,F],[T,T,T]]``."""
    n_ctx = _positive_int(n_ctx, "n_ctx")
    prefix_len = _positive_int(prefix_len, "prefix_len", minimum=0)
    if prefix_len > n_ctx:
        raise ValueError(f"prefix_len must be <= n_ctx={n_ctx}, got {prefix_len}")
    k = torch.arange(n_ctx, device=device)[None, :]
    return causal_mask(n_ctx, device=device) | (k < prefix_len)


def document_mask(doc_ids: Sequence[int] | Tensor, *, causal: bool = True, device=None) -> Bool[Tensor, "q_pos k_pos"]:
    """Block-diagonal mask for packed documents: ``document_mask([0, 0, 1], causal=False)`` ->
    ``[[T,T,F],[T,T,F],[F,F,T]]``. A query only sees keys of its own document (and, if ``causal``,
    not later ones)."""
    doc_ids = torch.as_tensor(doc_ids, device=device)
    if doc_ids.ndim != 1 or doc_ids.is_floating_point() or doc_ids.dtype == torch.bool or doc_ids.numel() == 0:
        raise TypeError(f"doc_ids must be a non-empty 1-d sequence of ints, got dtype {doc_ids.dtype} and shape {tuple(doc_ids.shape)}")
    same = doc_ids[:, None] == doc_ids[None, :]  # (q_pos, k_pos)
    return same & causal_mask(len(doc_ids), device=device) if causal else same


def combine_masks(*masks: Tensor) -> Tensor:
    """Allowed only where every mask allows: ``combine_masks(causal_mask(3), padding_mask([2], 3))``."""
    if not masks:
        raise ValueError("combine_masks needs at least one mask")
    out = masks[0]
    for mask in masks:
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"every mask must be a torch.bool tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
    for mask in masks[1:]:
        out = out & mask
    return out


def validate_mask(mask: Tensor, scores_shape: Sequence[int]) -> Bool[Tensor, "..."]:
    """Raise ``TypeError``/``ValueError`` unless ``mask`` is bool and broadcasts to ``scores_shape``;
    return it broadcast. ``validate_mask(causal_mask(3), (2, 3, 3)).shape`` -> ``(2, 3, 3)``."""
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"mask must be a torch.bool tensor (True = may attend), got {getattr(mask, 'dtype', type(mask).__name__)}")
    try:
        return torch.broadcast_to(mask, tuple(scores_shape))
    except RuntimeError as exc:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to scores of shape {tuple(scores_shape)}") from exc


def fully_masked_rows(mask: Bool[Tensor, "... q_pos k_pos"]) -> Bool[Tensor, "... q_pos"]:
    """Which queries may attend to nothing: ``fully_masked_rows(tensor([[True], [False]]))`` -> ``[False, True]``.

    ``masked_softmax`` returns an all-zero row there (documented, never NaN); a caller that wants to
    treat it as an error can check this first.
    """
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.ndim < 2:
        raise TypeError(f"mask must be a torch.bool tensor with at least 2 dims, got {getattr(mask, 'dtype', type(mask).__name__)}")
    return ~mask.any(dim=-1)


def apply_mask(scores: Tensor, mask: Tensor) -> Tensor:
    """Set forbidden scores to -inf: ``apply_mask(tensor([1., 2.]), tensor([True, False]))`` -> ``[1., -inf]``."""
    if not isinstance(scores, Tensor) or not scores.is_floating_point():
        raise TypeError(f"scores must be a floating-point tensor, got {getattr(scores, 'dtype', type(scores).__name__)}")
    mask = validate_mask(mask, scores.shape)
    return scores.masked_fill(~mask.to(scores.device), float("-inf"))


def mask_table(mask: Bool[Tensor, "q_pos k_pos"], tokens: Sequence[str]) -> str:
    """The mask as a text table, ``✓`` allowed and ``0`` blocked, rows = queries, columns = keys."""
    if mask.ndim != 2 or tuple(mask.shape) != (len(tokens), len(tokens)):
        raise ValueError(f"mask must have shape ({len(tokens)}, {len(tokens)}) for {len(tokens)} tokens, got {tuple(mask.shape)}")
    width = max(len(t) for t in tokens) + 1
    lines = ["looks at →".ljust(width + 4) + "".join(t.rjust(width) for t in tokens)]
    for token, row in zip(tokens, mask.tolist()):
        lines.append(token.ljust(width + 4) + "".join(("✓" if ok else "0").rjust(width) for ok in row))
    return "\n".join(lines)
