"""Rotary positions inside attention: rotate every head's queries and keys after the projection.

Covers ``rotate_queries_keys`` (notebook 02's ``positions.rope_rotate`` applied to the query and key
heads of a layer, (batch, head, pos, d_head), at positions ``offset, offset + 1, ...``: a KV cache
holding ``offset`` earlier positions needs the new ones rotated by their true positions) and the
conversion between the two pair layouts for a layer's weights: ``to_halves_layout`` and
``to_interleaved_layout`` reorder the output features of each head of ``W_Q``/``W_K``.
Interleaved RoPE (pairs (0, 1), (2, 3), ...: RoFormer, Meta's Llama code) with weights ``W`` gives
the same attention as rotate-half RoPE (pairs (i, i + d_head/2): GPT-NeoX, ``transformers``) with
``to_halves_layout(W)``: both q and k get the same permutation, and a dot product does not see it.
That permutation is what ``transformers``' conversion script applies to Meta's checkpoints.
Values are not rotated, so ``W_V`` and ``W_O`` stay as they are.
Leaves out RoPE scaling for long contexts (NTK, YaRN, Llama 3.1's) and caching the cos/sin tables.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor

from course_utils.positions import BASE, LAYOUTS, rope_rotate
from course_utils.validate import float_tensor, non_negative_int, one_of, positive_int, positive_number


def rotate_queries_keys(
    q: Float[Tensor, "batch head pos d_head"],
    k: Float[Tensor, "batch kv_head pos d_head"],
    offset: int = 0,
    base: float = BASE,
    layout: str = "halves",
) -> tuple[Tensor, Tensor]:
    """q and k with row ``p`` of every head rotated as position ``offset + p`` (``rope_rotate``).

    ``rotate_queries_keys(q, k, offset=5)`` equals the last rows of rotating ``[past; q]`` and
    ``[past; k]`` from position 0 when 5 positions came before (tested). ``layout`` is
    ``"halves"`` (rotate-half, ``transformers``' Llama; the default here) or ``"interleaved"``.
    """
    for name, x in (("q", q), ("k", k)):
        float_tensor(name, x, "(batch, head, pos, d_head)", finite=False)
        if x.ndim != 4:
            raise ValueError(f"{name} must have shape (batch, head, pos, d_head), got {tuple(x.shape)}")
    if k.shape[2:] != q.shape[2:] or k.shape[0] != q.shape[0]:
        raise ValueError(f"q and k must share batch, pos and d_head, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    offset, base = non_negative_int("offset", offset), positive_number("base", base)
    one_of("layout", layout, LAYOUTS)
    positions = torch.arange(offset, offset + q.shape[2], device=q.device)  # (pos,): where these rows sit
    return rope_rotate(q, positions, base, layout), rope_rotate(k, positions, base, layout)


def _check_weights(name: str, W: object) -> Tensor:
    float_tensor(name, W, "(head, d_model, d_head)", finite=False)
    if W.ndim != 3:
        raise ValueError(f"{name} must have shape (head, d_model, d_head), got {tuple(W.shape)}")
    positive_int(f"d_head (the last dim of {name})", W.shape[-1], even=True, why="features are rotated in pairs")
    return W


def to_halves_layout(W: Float[Tensor, "head d_model d_head"]) -> Float[Tensor, "head d_model d_head"]:
    """Per head, output features 0, 2, 4, ... then 1, 3, 5, ...: d_head = 4, [a, b, c, d] -> [a, c, b, d].

    Interleaved RoPE with ``W_Q``, ``W_K`` equals rotate-half RoPE with ``to_halves_layout`` of them.
    """
    W = _check_weights("W", W)
    d_head = W.shape[-1]
    pairs = W.unflatten(-1, (d_head // 2, 2))  # (head, d_model, pair, 2): the interleaved pairs
    return pairs.transpose(-1, -2).flatten(-2)  # (head, d_model, d_head): every pair's first, then its second


def to_interleaved_layout(W: Float[Tensor, "head d_model d_head"]) -> Float[Tensor, "head d_model d_head"]:
    """The inverse of ``to_halves_layout``: d_head = 4, [a, c, b, d] -> [a, b, c, d]."""
    W = _check_weights("W", W)
    d_head = W.shape[-1]
    halves = W.unflatten(-1, (2, d_head // 2))  # (head, d_model, 2, pair): first halves, then second halves
    return halves.transpose(-1, -2).flatten(-2)  # (head, d_model, d_head): pair by pair
