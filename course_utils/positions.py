"""Three ways to tell attention where each token sits: sinusoidal, learned, and rotary (RoPE).

Covers:
- ``sinusoidal_encoding(n_ctx, d_model)``: the fixed table of the original transformer (sine in
  even dimensions, cosine in odd ones, wavelengths growing geometrically with the pair index);
  ``sinusoid_frequencies`` and ``shift_rotation(k, d_model)``, the block-diagonal matrix R_k with
  PE(pos + k) = R_k · PE(pos) for every pos.
- ``LearnedPositionEmbedding``: a trainable ``W_pos`` table (n_ctx × d_model), as in GPT-2.
- ``closest_positions(table)``: the two positions whose vectors lie closest together (ties broken by
  a stated rule: the first pair in order), to show that one sine is ambiguous where sin/cos pairs
  at many frequencies are not.
- ``rope_rotate(x, positions, layout)``: rotate each pair of features of a query or key by the
  angle position × frequency. ``layout="interleaved"`` (the default) pairs (0, 1), (2, 3), ...,
  as the RoFormer paper, GPT-J and Meta's original Llama code do (Meta's code turns each pair into
  one complex number); ``layout="halves"`` pairs i with i + d/2, the "rotate-half" code of GPT-NeoX
  and of Hugging Face ``transformers`` (its Llama included). That is only a storage convention:
  ``halves_order(d)`` permutes one layout into the other, and the scores agree (which is why
  ``transformers`` permutes the rows of Meta's query and key weights when it converts a checkpoint).

- ``alibi_slopes(n_heads)`` and ``alibi_bias(n_heads, n_pos)``: ALiBi (Press et al.), no position
  vectors at all but a penalty on each attention score growing linearly with the distance back to the
  key, one slope per head (a geometric sequence; the paper's rule for a head count that is not a power of
  two), future keys at -inf.

Leaves out: other relative-bias schemes (T5's buckets), RoPE scaling for long contexts (NTK, YaRN), and
caching the cos/sin tables.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from course_utils.validate import float_tensor, has_data, integer, one_of, positive_int

BASE = 10_000.0
PAIRS = "features are rotated in pairs"  # why a width must be even


def sinusoid_frequencies(
    d_model: int, base: float = BASE, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
) -> Float[Tensor, "half"]:
    """Angular speed of each feature pair, 1 / base^(2i / d_model): ``sinusoid_frequencies(4)`` -> ``[1.0, 0.01]``.

    Built on ``device`` (default: the CPU).
    """
    positive_int("d_model", d_model, even=True, why=PAIRS)
    two_i = torch.arange(0, d_model, 2, dtype=dtype, device=device)  # (d_model // 2,)
    return base ** (-two_i / d_model)


def sinusoidal_encoding(
    n_ctx: int, d_model: int, base: float = BASE, dtype: torch.dtype = torch.float32
) -> Float[Tensor, "n_ctx d_model"]:
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(same):
    ``sinusoidal_encoding(2, 4)[1]`` -> ``[0.841, 0.540, 0.010, 1.000]``."""
    positive_int("n_ctx", n_ctx)
    angles = torch.arange(n_ctx, dtype=torch.float64)[:, None] * sinusoid_frequencies(
        d_model, base
    )  # (n_ctx, d_model // 2)
    pe = torch.stack([angles.sin(), angles.cos()], dim=-1)  # (n_ctx, d_model // 2, 2)
    return pe.reshape(n_ctx, d_model).to(dtype)  # (n_ctx, d_model): sin, cos, sin, cos, ...


def shift_rotation(
    k: int, d_model: int, base: float = BASE, dtype: torch.dtype = torch.float64
) -> Float[Tensor, "d_model d_model"]:
    """R_k with PE(pos + k) = R_k @ PE(pos) for every pos; built from k alone, never from pos.

    Each (sin a, cos a) pair moves to (sin(a+b), cos(a+b)) by the addition formulas, with b = k ×
    frequency: ``shift_rotation(1, 2) @ [sin 1, cos 1]`` -> ``[sin 2, cos 2]``.
    """
    integer("k", k)
    b = k * sinusoid_frequencies(d_model, base, dtype)  # (d_model // 2,)
    blocks = [torch.stack([torch.stack([c, s]), torch.stack([-s, c])]) for c, s in zip(b.cos(), b.sin())]
    return torch.block_diag(*blocks)  # (d_model, d_model): one 2×2 rotation per pair


class LearnedPositionEmbedding(nn.Module):
    """GPT-2's ``W_pos``: one trainable row per position; ``LearnedPositionEmbedding(1024, 768)(5)`` -> shape (5, 768).

    Unlike the sinusoidal table it has no values beyond n_ctx: a longer input raises ``ValueError``.
    """

    def __init__(self, n_ctx: int, d_model: int, init_std: float = 0.01):
        super().__init__()
        self.n_ctx, self.d_model = positive_int("n_ctx", n_ctx), positive_int("d_model", d_model)
        self.W_pos = nn.Parameter(torch.randn(n_ctx, d_model) * init_std)

    def forward(self, seq_len: int) -> Float[Tensor, "pos d_model"]:
        positive_int("seq_len", seq_len)
        if seq_len > self.n_ctx:
            raise ValueError(
                f"seq_len={seq_len} is longer than n_ctx={self.n_ctx}: a learned table has no rows beyond it"
            )
        return self.W_pos[:seq_len]  # (pos, d_model)


class ClosestPair(NamedTuple):
    distance: float
    i: int
    j: int
    n_tied: int  # pairs within the tie tolerance of the smallest distance (1 when the closest pair is unique)


def closest_positions(table: Float[Tensor, "n_ctx d"], atol: float | None = None) -> ClosestPair:
    """The two closest distinct rows, with how many pairs tie for closest:
    ``closest_positions(tensor([[0.], [1.], [0.1]]))`` -> ``ClosestPair(0.1, 0, 2, 1)``.

    Tie rule: every pair within ``atol`` of the smallest distance ties, and the first of them in
    order (smallest ``i``, then ``j``) is returned. Sinusoidal tables tie by construction (every pair
    of neighbours is the same distance apart), so without a rule the winner would be decided by
    rounding and differ between processors. ``atol`` defaults to sqrt(eps) of the table's dtype times
    max(1, max |table|): 1.5e-8 for float64, well above the ~1e-13 by which sin(pos · ω) is off at
    pos ~ 512, well below the gaps between distinct distances. Distances are taken in float64 without
    the matrix-product shortcut, which cancels digits.
    """
    if not isinstance(table, torch.Tensor) or not table.is_floating_point() or table.ndim != 2 or table.shape[0] < 2:
        raise ValueError(
            f"table must be a floating-point tensor of shape (n_ctx >= 2, d), got "
            f"{tuple(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__}"
        )
    t = table.double()
    if atol is None:
        scale = max(1.0, float(t.abs().max())) if has_data(t) else 1.0
        atol = torch.finfo(table.dtype).eps ** 0.5 * scale
    elif isinstance(atol, bool) or not isinstance(atol, (int, float)) or not 0 <= atol < float("inf"):
        raise ValueError(f"atol must be a finite number >= 0 (or None for the table's rounding), got {atol!r}")
    distances = torch.cdist(t, t, compute_mode="donot_use_mm_for_euclid_dist")  # (n_ctx, n_ctx)
    upper = torch.ones_like(distances, dtype=torch.bool).triu(diagonal=1)  # each pair once, i < j
    distances = distances.masked_fill(~upper, float("inf"))
    smallest = distances.min()
    tied = (distances <= smallest + atol).nonzero()  # (n_tied, 2) in row-major order: the first pair first
    i, j = (int(v) for v in tied[0])
    return ClosestPair(float(smallest), i, j, int(tied.shape[0]))


def halves_order(d_head: int) -> Int[Tensor, "d_head"]:
    """Feature order that turns the interleaved layout into the halves one:
    ``halves_order(6)`` -> ``[0, 2, 4, 1, 3, 5]``.

    ``rope_rotate(x[..., order], layout="halves") == rope_rotate(x)[..., order]``.
    """
    positive_int("d_head", d_head, even=True, why=PAIRS)
    return torch.cat([torch.arange(0, d_head, 2), torch.arange(1, d_head, 2)])


LAYOUTS = ("interleaved", "halves")


def rope_rotate(
    x: Float[Tensor, "... pos d_head"],
    positions: Int[Tensor, "pos"] | None = None,
    base: float = BASE,
    layout: str = "interleaved",
) -> Float[Tensor, "... pos d_head"]:
    """Rotate each feature pair (2i, 2i+1) of row ``pos`` by angle pos × base^(-2i/d_head).

    ``rope_rotate(tensor([[1., 0.], [1., 0.]]))`` -> ``[[1, 0], [cos 1, sin 1]]``. ``positions``
    defaults to 0, 1, 2, ... Rotating queries and keys this way makes q·k depend only on the
    offset between their positions. ``layout="halves"`` pairs feature i with i + d_head/2 instead
    (rotate-half, as in GPT-NeoX and Hugging Face's Llama; Meta's own Llama code is interleaved).
    """
    one_of("layout", layout, LAYOUTS)
    float_tensor("x", x, "(..., pos, d_head)", min_dims=2, finite=False)
    d_head, n_pos = x.shape[-1], x.shape[-2]
    positive_int("d_head (the last dim of x)", d_head, even=True, why=PAIRS)
    if positions is None:
        positions = torch.arange(n_pos, device=x.device)
    if not isinstance(positions, torch.Tensor) or positions.shape != (n_pos,):
        raise ValueError(
            f"positions must be a tensor of shape ({n_pos},), got "
            f"{tuple(positions.shape) if isinstance(positions, torch.Tensor) else type(positions).__name__}"
        )
    wide = torch.float32 if x.device.type == "mps" else torch.float64  # Apple's GPU has no float64
    freqs = sinusoid_frequencies(d_head, base, dtype=wide, device=x.device)  # (d_head // 2,), made where x lives
    angles = positions.to(device=x.device, dtype=wide)[:, None] * freqs  # (pos, d_head // 2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if layout == "halves":
        first, second = x[..., : d_head // 2], x[..., d_head // 2 :]  # each (..., pos, d_head // 2)
        return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)  # (..., pos, d_head)
    pairs = x.reshape(*x.shape[:-1], d_head // 2, 2)  # (..., pos, d_head // 2, 2)
    first, second = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack(
        [first * cos - second * sin, first * sin + second * cos], dim=-1
    )  # (..., pos, d_head // 2, 2)
    return rotated.reshape(x.shape)  # (..., pos, d_head)


def alibi_slopes(n_heads: int) -> Float[Tensor, "n_heads"]:
    """ALiBi's slope per head: ``alibi_slopes(8)`` -> ``[1/2, 1/4, ..., 1/256]`` (float64).

    For a power of two n the slopes are 2^(-8/n), 2^(-16/n), ..., 2^(-8); otherwise the slopes of the
    largest power of two below n, then every other slope of twice that power (the paper's code).
    """
    positive_int("n_heads", n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    first = 2.0 ** (-8 * torch.arange(1, closest + 1, dtype=torch.float64) / closest)
    odd = 2 * torch.arange(n_heads - closest, dtype=torch.float64) + 1  # 1, 3, 5, ...: every other slope of 2 × closest
    extra = 2.0 ** (-4 * odd / closest)
    return torch.cat([first, extra])


def alibi_bias(n_heads: int, n_pos: int) -> Float[Tensor, "n_heads n_pos n_pos"]:
    """ALiBi's causal bias: entry [h, i, j] is -slope_h × (i - j) for j <= i and -inf for a future key j > i.

    Added to the attention scores before the softmax: ``alibi_bias(1, 2)`` -> ``[[[0, -inf], [-0.00390625, 0]]]``.
    """
    positive_int("n_pos", n_pos)
    pos = torch.arange(n_pos)
    offset = (pos[None, :] - pos[:, None]).to(torch.float64)  # (q_pos, k_pos): j - i, -distance back to key j
    bias = alibi_slopes(n_heads)[:, None, None] * offset  # (n_heads, q_pos, k_pos)
    return bias.masked_fill(offset > 0, float("-inf"))
