"""Attention masks: which keys each query may look at.

Every mask here is a ``torch.bool`` tensor with ``True`` = may attend, shaped (or broadcastable to)
``(..., q_pos, k_pos)``, the convention ``course_utils.softmax.masked_softmax`` and
``course_utils.attention.dot_product`` use. Covers causal, padding, sliding-window, prefix-LM and
block-diagonal (packed documents) masks, a left-padded batch of prompts (``left_padded_batch``: ids,
causal-and-padding mask and positions), combining them, validating a mask against a score shape,
finding rows with nothing allowed, and ``preset_mask``, one small example of each kind by name (the
tables of notebook 04 and the presets of its mask editor). Leaves out additive float masks and
attention sinks.
"""

from __future__ import annotations

from typing import Sequence

import torch
from jaxtyping import Bool
from torch import Tensor

from course_utils.validate import bool_tensor, float_tensor, int_in, positive_int

PRESETS = ("causal", "padding", "sliding window", "prefix-LM", "block-diagonal documents", "all")


def causal_mask(n_q: int, n_k: int | None = None, *, device=None) -> Bool[Tensor, "q_pos k_pos"]:
    """Lower-triangular mask: ``causal_mask(3)`` -> ``[[T, F, F], [T, T, F], [T, T, T]]``.

    With ``n_k > n_q`` the queries are the last ``n_q`` positions (as when earlier keys are cached),
    so query ``i`` may see keys ``0 .. i + n_k - n_q``.
    """
    n_q = positive_int("n_q", n_q)
    n_k = n_q if n_k is None else positive_int("n_k", n_k)
    if n_k < n_q:
        raise ValueError(f"n_k must be >= n_q (queries are the last n_q positions), got n_q={n_q}, n_k={n_k}")
    return torch.ones(n_q, n_k, dtype=torch.bool, device=device).tril(diagonal=n_k - n_q)


def padding_mask(lengths: Sequence[int] | Tensor, n_ctx: int, *, device=None) -> Bool[Tensor, "batch 1 k_pos"]:
    """Hide padding keys: ``padding_mask([2], 3)`` -> ``[[[T, T, F]]]`` (shape batch × 1 × k_pos).

    Sequence ``b`` holds ``lengths[b]`` real tokens followed by padding. The middle axis of size 1
    broadcasts over query positions; combine with ``causal_mask`` using ``&``.
    """
    n_ctx = positive_int("n_ctx", n_ctx)
    lengths = torch.as_tensor(lengths, device=device)
    if lengths.ndim != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise TypeError(
            f"lengths must be a 1-d sequence of ints, got dtype {lengths.dtype} and shape {tuple(lengths.shape)}"
        )
    if (lengths < 1).any() or (lengths > n_ctx).any():
        raise ValueError(f"every length must be in 1..n_ctx={n_ctx}, got {lengths.tolist()}")
    positions = torch.arange(n_ctx, device=device)
    return (positions[None, :] < lengths[:, None])[:, None, :]  # (batch, 1, k_pos)


def left_padded_batch(
    prompts: Sequence[Sequence[int]], pad_id: int
) -> tuple[Tensor, Bool[Tensor, "batch q_pos k_pos"], Tensor]:
    """Prompts of different lengths as one batch, padded on the LEFT so that every prompt ends in the last
    column, where generation appends: ``left_padded_batch([[5, 6, 7], [8]], 0)`` -> ids ``[[5, 6, 7], [0, 0, 8]]``,
    positions ``[[0, 1, 2], [0, 0, 0]]`` and a (batch, pos, pos) mask, causal and hiding the padding keys.

    Each prompt's positions count from 0 at its first real token (padding gets 0), so a model sees the same
    positions as for the prompt alone. A padding query may see nothing (an empty row): pair the mask with a
    softmax that gives zeros there (``masked_softmax``); real queries never see padding.
    """
    lists = isinstance(prompts, (list, tuple)) and all(isinstance(p, (list, tuple)) and p for p in prompts)
    if not lists or not prompts:
        raise ValueError("prompts must be a non-empty list of non-empty lists of token ids")
    if isinstance(pad_id, bool) or not isinstance(pad_id, int):
        raise TypeError(f"pad_id must be an int, got {type(pad_id).__name__}")
    n_ctx = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (n_ctx - len(p)) + [int(t) for t in p] for p in prompts])  # (batch, pos)
    real = torch.tensor([[False] * (n_ctx - len(p)) + [True] * len(p) for p in prompts])  # (batch, pos)
    positions = (real.cumsum(dim=-1) - 1).clamp_min(0)  # (batch, pos)
    return ids, causal_mask(n_ctx) & real[:, None, :], positions


def sliding_window_mask(n_ctx: int, window: int, *, device=None) -> Bool[Tensor, "q_pos k_pos"]:
    """Causal, but only the last ``window`` keys: ``sliding_window_mask(3, 2)`` -> ``[[T,F,F],[T,T,F],[F,T,T]]``."""
    n_ctx = positive_int("n_ctx", n_ctx)
    window = positive_int("window", window)
    q = torch.arange(n_ctx, device=device)[:, None]
    k = torch.arange(n_ctx, device=device)[None, :]
    return (k <= q) & (q - k < window)


def prefix_lm_mask(n_ctx: int, prefix_len: int, *, device=None) -> Bool[Tensor, "q_pos k_pos"]:
    """Every query sees the whole prefix, then causal: ``prefix_lm_mask(3, 2)`` -> ``[[T,T,F],[T,T,F],[T,T,T]]``."""
    n_ctx = positive_int("n_ctx", n_ctx)
    prefix_len = int_in("prefix_len", prefix_len, 0, n_ctx, high_name="n_ctx")
    k = torch.arange(n_ctx, device=device)[None, :]
    return causal_mask(n_ctx, device=device) | (k < prefix_len)


def document_mask(doc_ids: Sequence[int] | Tensor, *, causal: bool = True, device=None) -> Bool[Tensor, "q_pos k_pos"]:
    """Block-diagonal mask for packed documents: ``document_mask([0, 0, 1], causal=False)`` ->
    ``[[T,T,F],[T,T,F],[F,F,T]]``. A query only sees keys of its own document (and, if ``causal``,
    not later ones)."""
    doc_ids = torch.as_tensor(doc_ids, device=device)
    if doc_ids.ndim != 1 or doc_ids.is_floating_point() or doc_ids.dtype == torch.bool or doc_ids.numel() == 0:
        raise TypeError(
            "doc_ids must be a non-empty 1-d sequence of ints, "
            f"got dtype {doc_ids.dtype} and shape {tuple(doc_ids.shape)}"
        )
    same = doc_ids[:, None] == doc_ids[None, :]  # (q_pos, k_pos)
    return same & causal_mask(len(doc_ids), device=device) if causal else same


def combine_masks(*masks: Tensor) -> Tensor:
    """Allowed only where every mask allows: ``combine_masks(causal_mask(3), padding_mask([2], 3))``."""
    if not masks:
        raise ValueError("combine_masks needs at least one mask")
    for i, mask in enumerate(masks):
        bool_tensor(f"masks[{i}]", mask)
    out = masks[0]
    for mask in masks[1:]:
        out = out & mask
    return out


def validate_mask(mask: Tensor, scores_shape: Sequence[int]) -> Bool[Tensor, "..."]:
    """Raise ``TypeError``/``ValueError`` unless ``mask`` is bool and broadcasts to ``scores_shape``;
    return it broadcast. ``validate_mask(causal_mask(3), (2, 3, 3)).shape`` -> ``(2, 3, 3)``."""
    bool_tensor("mask", mask)
    try:
        return torch.broadcast_to(mask, tuple(scores_shape))
    except RuntimeError as exc:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to scores of shape {tuple(scores_shape)}"
        ) from exc


def fully_masked_rows(mask: Bool[Tensor, "... q_pos k_pos"]) -> Bool[Tensor, "... q_pos"]:
    """Which queries may attend to nothing: ``fully_masked_rows(tensor([[True], [False]]))`` -> ``[False, True]``.

    ``masked_softmax`` returns an all-zero row there (documented, never NaN); a caller that wants to
    treat it as an error can check this first.
    """
    bool_tensor("mask", mask)
    if mask.ndim < 2:
        raise ValueError(f"mask must have at least 2 dims (..., q_pos, k_pos), got shape {tuple(mask.shape)}")
    return ~mask.any(dim=-1)


def apply_mask(scores: Tensor, mask: Tensor) -> Tensor:
    """Set forbidden scores to -inf: ``apply_mask(tensor([1., 2.]), tensor([True, False]))`` -> ``[1., -inf]``."""
    float_tensor("scores", scores, min_dims=0, finite=False)  # -inf scores are allowed
    mask = validate_mask(mask, scores.shape)
    return scores.masked_fill(~mask.to(scores.device), float("-inf"))


def mask_table(mask: Bool[Tensor, "q_pos k_pos"], tokens: Sequence[str]) -> str:
    """The mask as a text table, ``✓`` allowed and ``0`` blocked, rows = queries, columns = keys."""
    if mask.ndim != 2 or tuple(mask.shape) != (len(tokens), len(tokens)):
        raise ValueError(
            f"mask must have shape ({len(tokens)}, {len(tokens)}) for {len(tokens)} tokens, got {tuple(mask.shape)}"
        )
    width = max(len(t) for t in tokens) + 1
    lines = ["looks at →".ljust(width + 4) + "".join(t.rjust(width) for t in tokens)]
    for token, row in zip(tokens, mask.tolist()):
        lines.append(token.ljust(width + 4) + "".join(("✓" if ok else "0").rjust(width) for ok in row))
    return "\n".join(lines)


def preset_mask(name: str, n_ctx: int) -> Bool[Tensor, "q_pos k_pos"]:
    """One of ``PRESETS`` as a (n_ctx, n_ctx) bool mask: ``preset_mask("causal", 3)`` -> the lower triangle.

    padding: causal, and the last 2 positions are padding keys; sliding window: 3 keys; prefix-LM:
    the first half is the prefix; block-diagonal documents: two packed documents, each causal;
    all: every query sees every key.
    """
    n_ctx = positive_int("n_ctx", n_ctx)
    if name == "causal":
        return causal_mask(n_ctx)
    if name == "padding":
        return combine_masks(causal_mask(n_ctx), padding_mask([max(1, n_ctx - 2)], n_ctx)[0])
    if name == "sliding window":
        return sliding_window_mask(n_ctx, 3)
    if name == "prefix-LM":
        return prefix_lm_mask(n_ctx, n_ctx // 2)
    if name == "block-diagonal documents":
        return document_mask([0] * (n_ctx // 2) + [1] * (n_ctx - n_ctx // 2))
    if name == "all":
        return torch.ones(n_ctx, n_ctx, dtype=torch.bool)
    raise ValueError(f"preset must be one of {PRESETS}, got {name!r}")
