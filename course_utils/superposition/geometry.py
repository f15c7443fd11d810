"""The geometry behind superposition: how close to perpendicular random directions are.

Covers drawing random unit vectors, the statistics of the angles between all pairs of them
(chunked, so thousands of vectors in thousands of dimensions fit in bounded memory, on whatever
device the vectors are on), the Welch bound on the largest |cos| any N unit vectors in D dimensions
must have, a least-squares power-law fit (for the 1/√D law), and notebook 06's one-neuron AND gate built
from random word directions (whose stray overlaps are that geometry's interference). Toy models that
*use* this geometry are in ``course_utils.superposition.toy_models``; leaves out Johnson–Lindenstrauss constructions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from jaxtyping import Float
from torch import Tensor
from course_utils.env.progress import progress_bar

from course_utils.validate import positive_int


def random_unit_vectors(n: int, d: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> Float[Tensor, "n d"]:
    """``n`` directions drawn uniformly on the sphere in ``d`` dimensions (normalised Gaussians), on the CPU.

    ``random_unit_vectors(3, 5).norm(dim=1)`` -> ``[1., 1., 1.]``. Move the result with ``.to(device)``.
    """
    n, d = positive_int("n", n), positive_int("d", d)
    gen = torch.Generator().manual_seed(seed)
    v = torch.randn(n, d, generator=gen, dtype=dtype)
    return v / v.norm(dim=1, keepdim=True)


@dataclass(frozen=True)
class AngleStats:
    """Summary of the angles between all pairs i < j of a set of vectors (deviations in degrees from 90°).

    ``rms_deviation_deg`` is the root-mean-square of (angle − 90°), the "typical" deviation;
    ``max_deviation_deg`` the worst pair's; ``hist_counts`` count the angles in ``hist_edges`` (degrees).
    """

    n_vectors: int
    dim: int
    n_pairs: int
    rms_deviation_deg: float
    mean_abs_deviation_deg: float
    max_deviation_deg: float
    max_abs_cos: float
    hist_counts: Tensor
    hist_edges: Tensor


def _check_vectors(vectors) -> Tensor:
    """Validate a (n, d) batch of at least two finite non-zero vectors; return their norms (n,)."""
    if not isinstance(vectors, Tensor):
        raise TypeError(f"vectors must be a torch.Tensor of shape (n, d), got {type(vectors).__name__}")
    if vectors.ndim != 2:
        raise ValueError(f"vectors must have shape (n, d), got {tuple(vectors.shape)}")
    if vectors.shape[0] < 2:
        raise ValueError(f"vectors must hold at least two vectors (rows) to form a pair, got {vectors.shape[0]}")
    if vectors.shape[1] < 1:
        raise ValueError("vectors must have at least one dimension (column)")
    if not vectors.is_floating_point():
        raise TypeError(f"vectors must be floating point, got dtype {vectors.dtype}")
    norms = vectors.norm(dim=1)  # NaN or inf anywhere in a row makes its norm non-finite
    if not torch.isfinite(norms).all():
        raise ValueError("vectors must be finite (found NaN or inf)")
    if (norms == 0).any():
        raise ValueError("vectors must be non-zero: a zero vector has no direction")
    return norms


_SPLIT_MACS = 1 << 28  # diagonal tiles above this many multiply-adds are halved (see _triangle_tiles)
_HISTC_PIECE = 1 << 24  # float32 counts stay exact up to 2**24 per call


def _gram(rows: Tensor, cols: Tensor) -> Tensor:
    """``rows @ cols.T``: one block of the Gram matrix."""
    return rows @ cols.T


def _triangle_tiles(start: int, stop: int, dim: int):
    """Tiles (r0, r1, c0, c1) covering the pairs start <= i < j < stop exactly once.

    A diagonal tile (r0 == c0; only its strict upper triangle are pairs) costs twice the multiply-adds
    it needs, so while one would be big (over ``_SPLIT_MACS``) it is halved: a rectangle (first half
    × second half, every entry a pair) and two diagonal tiles of half the size. Small ones stay whole:
    there a matmul call costs more than the wasted half.
    """
    size = stop - start
    if size <= 1 or size * size * dim <= _SPLIT_MACS:
        yield start, stop, start, stop
        return
    mid = start + size // 2
    yield from _triangle_tiles(start, mid, dim)
    yield start, mid, mid, stop
    yield from _triangle_tiles(mid, stop, dim)


def _add_angles(cos: Tensor, totals: Tensor, counts: Tensor, clamp: bool) -> None:
    """Turn flat cosines (overwritten in place) into angle deviations and add them to the running totals.

    ``totals`` is float64 [Σ dev², Σ |dev|, max |cos|] and ``counts`` a float64 histogram over −90°..90°
    (radians). Sums are taken in float32 (pairwise summation, accurate to ~1e-7) and added in float64.
    """
    low, high = torch.aminmax(cos)
    totals[2] = torch.maximum(totals[2], torch.maximum(-low, high))
    if clamp or low < -1.0 or high > 1.0:  # rounding can step just past ±1
        cos.clamp_(-1.0, 1.0)
    deviation = cos.asin_()  # radians; angle − 90° = −asin(cos), the sign is irrelevant here
    bins = counts.numel()
    for piece in deviation.split(_HISTC_PIECE):  # histc counts in the input's dtype: float32 is exact below 2**24
        counts += torch.histc(piece, bins=bins, min=-math.pi / 2, max=math.pi / 2)
    acc = torch.promote_types(cos.dtype, torch.float32)
    totals[1] += deviation.abs_().sum(dtype=acc)
    totals[0] += deviation.square_().sum(dtype=acc)


def pairwise_angle_stats(
    vectors: Float[Tensor, "n d"], chunk_size: int = 1024, bins: int = 1800, progress: bool = False
) -> AngleStats:
    """Angle statistics over all n(n−1)/2 pairs, computed a block of rows at a time on ``vectors.device``.

    Block i compares rows i:i+chunk with the rows after them (a chunk × (n − i − chunk) rectangle,
    every entry a pair) and with each other (the chunk's own upper triangle, in halving tiles while
    they are big, so little of the lower half is ever computed); each dot product is multiplied by
    the two inverse norms. So the extra memory is O(chunk · n) (no normalised copy of the input) and
    half the full Gram matrix's work is skipped. Cosines become angles in place (arcsin); the chunks'
    own triangles (n · chunk / 2 values) are collected and binned together at the end.
    ``pairwise_angle_stats(torch.eye(3)).max_deviation_deg`` -> ``0.0`` (all pairs perpendicular).
    """
    norms = _check_vectors(vectors)
    chunk_size, bins = positive_int("chunk_size", chunk_size), positive_int("bins", bins)
    n, d = vectors.shape
    device = vectors.device
    clamp = device.type != "cpu"  # on the CPU, clamp only when a cosine is past ±1 (checking is free there)
    with torch.no_grad():
        vectors = vectors.detach().contiguous()
        inv_norms = 1.0 / norms.detach()
        totals = torch.zeros(3, dtype=torch.float64, device=device)  # Σ dev², Σ |dev|, max |cos|
        counts = torch.zeros(bins, dtype=torch.float64, device=device)
        width = min(chunk_size, n)
        square = torch.zeros(width, width, dtype=vectors.dtype, device=device)  # one chunk's own cosines
        upper = {}  # chunk size -> flat positions in ``square`` of its strict upper triangle (i < j)
        sizes = [min(chunk_size, n - start) for start in range(0, n - 1, chunk_size)]
        inside = torch.empty(sum(s * (s - 1) // 2 for s in sizes), dtype=vectors.dtype, device=device)
        filled = 0
        chunks = range(0, n - 1, chunk_size)
        for start in progress_bar(chunks, desc=f"pairs (d={d})", unit="chunk", disable=not progress):
            stop = min(start + chunk_size, n)
            size = stop - start
            if stop < n:  # the chunk against every row after it
                right = _gram(vectors[start:stop], vectors[stop:])
                _add_angles(
                    right.mul_(inv_norms[start:stop, None]).mul_(inv_norms[None, stop:]).view(-1), totals, counts, clamp
                )
            for r0, r1, c0, c1 in _triangle_tiles(start, stop, d):  # the chunk's own pairs
                square[r0 - start : r1 - start, c0 - start : c1 - start] = _gram(vectors[r0:r1], vectors[c0:c1])
            square[:size, :size].mul_(inv_norms[start:stop, None]).mul_(inv_norms[None, start:stop])
            if size not in upper:
                i, j = torch.triu_indices(size, size, offset=1, device=device)
                upper[size] = i * width + j
            torch.index_select(square.view(-1), 0, upper[size], out=inside[filled : filled + len(upper[size])])
            filled += len(upper[size])
        if inside.numel():
            _add_angles(inside, totals, counts, clamp)
    n_pairs = n * (n - 1) // 2
    sum_sq, sum_abs, max_abs_cos = totals.tolist()
    worst = min(max_abs_cos, 1.0)
    return AngleStats(
        n_vectors=n,
        dim=d,
        n_pairs=n_pairs,
        rms_deviation_deg=math.degrees(math.sqrt(sum_sq / n_pairs)),
        mean_abs_deviation_deg=math.degrees(sum_abs / n_pairs),
        max_deviation_deg=math.degrees(math.asin(worst)),
        max_abs_cos=worst,
        hist_counts=counts.flip(0).cpu(),  # deviation −90°..90° is angle 180°..0°: flip to ascending angle
        hist_edges=torch.linspace(0.0, 180.0, bins + 1, dtype=torch.float64),
    )


def angle_deviation_summary(vectors: Float[Tensor, "n d"]) -> Float[Tensor, "2"]:
    """[RMS, max] of |angle − 90°| in degrees over all pairs i < j, in one Gram matrix (small n only).

    ``angle_deviation_summary(torch.tensor([[1., 0.], [1., 1.]]))`` -> ``[45., 45.]``.
    """
    unit = vectors / _check_vectors(vectors)[:, None]
    n = unit.shape[0]
    cos = (unit @ unit.T).clamp(-1.0, 1.0)  # (n, n)
    i, j = torch.triu_indices(n, n, offset=1, device=unit.device)
    deviation = torch.rad2deg(torch.arccos(cos[i, j])) - 90.0  # (n_pairs,)
    return torch.stack([deviation.square().mean().sqrt(), deviation.abs().max()])


def welch_bound(n: int, d: int) -> float:
    """The smallest possible max |cos θ| over pairs of ``n`` unit vectors in ``d`` dimensions.

    sqrt((n − d) / (d (n − 1))) when n > d; 0 when n ≤ d (n orthogonal vectors fit).
    ``welch_bound(3, 2)`` -> ``0.5`` (three directions 120° apart).
    """
    n, d = positive_int("n", n), positive_int("d", d)
    if n < 2:
        raise ValueError(f"n must be at least 2 (a bound on pairs needs two vectors), got {n}")
    return math.sqrt((n - d) / (d * (n - 1))) if n > d else 0.0


def fit_power_law(x, y) -> tuple[float, float]:
    """Least-squares fit of y ≈ c · x^k in log-log space; returns (c, k).

    ``fit_power_law([1, 4, 16], [1, 0.5, 0.25])`` -> ``(1.0, -0.5)``.
    """
    x = torch.as_tensor(x, dtype=torch.float64)
    y = torch.as_tensor(y, dtype=torch.float64)
    if x.ndim != 1 or x.shape != y.shape or x.numel() < 2:
        raise ValueError(
            f"x and y must be 1-d with the same length of at least 2, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if not ((x > 0).all() and (y > 0).all()):
        raise ValueError("x and y must be positive to fit a power law")
    design = torch.stack([torch.ones_like(x), x.log()], dim=1)  # (points, 2)
    solution = torch.linalg.lstsq(design, y.log()[:, None]).solution[:, 0]
    return math.exp(solution[0].item()), solution[1].item()


AND_GATE_WORDS = ("Michael", "Jordan", "Phelps", "Alexis", "basketball")
AND_GATE_INPUTS = (("Michael", "Jordan"), ("Michael", "Phelps"), ("Alexis", "Jordan"))  # both names, then one


@dataclass(frozen=True)
class AndGate:
    """A one-neuron MLP (``mlp.mlp_forward`` shapes) and the unit word directions it was built from (float64)."""

    directions: dict[str, Tensor]  # word -> (d_model,)
    W_in: Tensor  # (d_model, 1): Michael + Jordan
    b_in: Tensor  # (1,): -threshold
    W_out: Tensor  # (1, d_model): basketball / (2 - threshold)


def and_gate(threshold: float = 1.5, seed: int = 0, d_model: int = 12_288) -> AndGate:
    """The neuron ReLU(x · (Michael + Jordan) − threshold) writing basketball, from random word directions.

    A token with both names has a dot product near 2, with one name near 1, each off by the stray overlaps
    of nearly perpendicular directions; the neuron fires where the dot product exceeds ``threshold``
    (in (0, 2)). The output row is basketball / (2 − threshold), so a full match writes about one unit.
    ``and_gate(1.5, d_model=64).b_in`` -> ``tensor([-1.5], dtype=torch.float64)``.
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold < 2:
        raise ValueError(f"threshold must be a number in (0, 2), between no name and two names, got {threshold!r}")
    vectors = random_unit_vectors(len(AND_GATE_WORDS), d_model, seed=seed).double()  # (5, d_model)
    directions = dict(zip(AND_GATE_WORDS, vectors))
    W_in = (directions["Michael"] + directions["Jordan"])[:, None]  # (d_model, 1)
    b_in = torch.tensor([-float(threshold)], dtype=torch.float64)
    W_out = directions["basketball"][None, :] / (2 - threshold)  # (1, d_model)
    return AndGate(directions, W_in, b_in, W_out)


def and_gate_preactivations(gate: AndGate) -> Float[Tensor, "3"]:
    """x · W_in + b_in for each input of ``AND_GATE_INPUTS``, x the sum of its two names' directions.

    Near 2 − threshold for Michael Jordan and −(threshold − 1) for a single name, each off by interference.
    """
    tokens = torch.stack([gate.directions[first] + gate.directions[last] for first, last in AND_GATE_INPUTS])
    return (tokens @ gate.W_in + gate.b_in)[:, 0]  # (3,)
