"""How attention's cost grows with the sequence length n_ctx, and what a mask can save.

Covers ``pair_counts`` (the n² table relative to a baseline length), ``measure_attention``
(median wall time of the readable attention and the bytes of the pattern it builds, on any device;
on CUDA also the peak memory allocated), ``fit_exponent`` (the slope of a log-log fit, ≈ 2 for a
cost that grows as n²), ``sliding_window_attention`` (attention under a sliding-window mask that
only computes the band, O(n·w) instead of O(n²)) and ``measure_mask_savings`` (the fused kernel
with no mask, told the mask is causal, given the same causal mask as a boolean table, and the
windowed variant, timed side by side) and ``visited_tiles`` (the share of score tiles a kernel that
skips empty tiles must compute). Leaves out writing a tiled kernel (FlashAttention) itself.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Sequence

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor

from course_utils.attention.dot_product import IMPLS, attention_pattern
from course_utils.masking import causal_mask
from course_utils.softmax import masked_softmax
from course_utils.env.threads import torch_threads
from course_utils.validate import bool_tensor, positive_int


def pair_counts(lengths: Sequence[int], baseline: int | None = None) -> list[dict]:
    """Token-to-token pairs and cost relative to the first length:
    ``pair_counts([1000, 4000])`` ->
    ``[{'n_ctx': 1000, 'pairs': 1000000, 'relative': 1.0}, {... 'relative': 16.0}]``."""
    if not lengths:
        raise ValueError("lengths must hold at least one length, got none")
    for i, n in enumerate(lengths):
        positive_int(f"lengths[{i}]", n)
    if baseline is not None:
        positive_int("baseline", baseline)
    base = (baseline or lengths[0]) ** 2
    return [{"n_ctx": n, "pairs": n * n, "relative": n * n / base} for n in lengths]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_attention(
    n_ctx_values: Sequence[int],
    d_head: int = 64,
    n_heads: int = 1,
    device="cpu",
    repeats: int = 5,
    seed: int = 0,
    cpu_threads: int | None = 1,
) -> list[dict]:
    """Time the readable attention (scores, causal mask, softmax, weighted sum) for each length.

    Returns one dict per length: ``n_ctx``, ``seconds`` (median of ``repeats`` runs after a warm-up),
    ``pattern_bytes`` (size of the (head, q_pos, k_pos) pattern tensor actually built) and, on CUDA,
    ``peak_bytes`` (torch.cuda.max_memory_allocated during one run). On the CPU the timing runs on
    ``cpu_threads`` threads (restored afterwards; None = leave as is): on a small shared machine one
    thread gives much steadier numbers than several competing ones.
    """
    device = torch.device(device)
    with torch_threads(cpu_threads if device.type == "cpu" else None, name="cpu_threads"):
        return _measure(n_ctx_values, d_head, n_heads, device, repeats, seed)


def _measure(n_ctx_values, d_head, n_heads, device, repeats, seed) -> list[dict]:
    gen = torch.Generator(device=device).manual_seed(seed)
    results = []
    for n in n_ctx_values:
        q, k, v = torch.randn(3, n_heads, n, d_head, generator=gen, device=device)  # 3 × (head, pos, d_head)
        mask = causal_mask(n, device=device)

        def run():
            pattern = attention_pattern(q, k, mask)  # (head, q_pos, k_pos)
            return pattern, pattern @ v

        seconds = _median_seconds(run, device, repeats)
        pattern, _ = run()
        row = {"n_ctx": n, "seconds": seconds, "pattern_bytes": pattern.numel() * pattern.element_size()}
        if device.type == "cuda":
            del pattern
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            run()
            _sync(device)
            row["peak_bytes"] = torch.cuda.max_memory_allocated(device) - before
        results.append(row)
    return results


def fit_exponent(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Slope b of the least-squares line log y = a + b log x: ``fit_exponent([1, 2, 4], [1, 4, 16])`` -> ``2.0``."""
    if len(xs) != len(ys) or len(xs) < 2 or min(xs) <= 0 or min(ys) <= 0:
        raise ValueError(f"need at least two positive (x, y) pairs of equal length, got {len(xs)} xs and {len(ys)} ys")
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def _band_blocks(x: Tensor, window: int, n_blocks: int) -> Tensor:
    """Keys (or values) for each block of ``window`` queries: the block itself and the one before.

    (..., pos, d) -> (..., n_blocks, 2 * window, d); block b holds positions b*w - w .. b*w + w - 1
    (zeros where that runs off either end).
    """
    pos = x.shape[-2]
    padded = F.pad(x, (0, 0, window, n_blocks * window - pos))  # (..., (n_blocks + 1) * window, d)
    blocks = padded.unfold(-2, 2 * window, window)  # (..., n_blocks, d, 2 * window)
    return blocks.transpose(-2, -1)  # (..., n_blocks, 2 * window, d)


def _band_mask(window: int, n_blocks: int, device) -> Tensor:
    """(n_blocks, w, 2w): query i of a block may see key j of its band when i < j <= i + w, and never
    a key before position 0 (the first block's left half)."""
    i = torch.arange(window, device=device)[:, None]
    j = torch.arange(2 * window, device=device)[None, :]
    band = (j > i) & (j <= i + window)  # (w, 2w)
    mask = band.expand(n_blocks, window, 2 * window).clone()
    mask[0, :, :window] = False  # keys at negative positions
    return mask


def sliding_window_attention(
    q: Float[Tensor, "... pos d_head"],
    k: Float[Tensor, "... pos d_head"],
    v: Float[Tensor, "... pos d_head_v"],
    window: int,
    *,
    impl: str = "reference",
) -> Float[Tensor, "... pos d_head_v"]:
    """Causal attention over the last ``window`` keys, computing only the band: O(pos · window) work.

    Same numbers as ``scaled_dot_product_attention(q, k, v, sliding_window_mask(pos, window))``
    (tested), which builds the whole pos × pos table. Queries go in blocks of ``window``; each block
    is scored against its own keys and the previous block's (2·window keys), masked to the band.
    ``impl="fused"`` runs the blocks through ``torch.nn.functional.scaled_dot_product_attention``.
    """
    positive_int("window", window)
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
    if (
        not all(isinstance(t, Tensor) for t in (q, k, v))
        or q.ndim < 2
        or q.shape[:-1] != k.shape[:-1]
        or k.shape[:-1] != v.shape[:-1]
    ):
        raise ValueError(
            "q, k and v must be tensors of shape (..., pos, d) with the same leading dims "
            "and positions (self-attention), "
            f"got {[tuple(getattr(t, 'shape', ())) for t in (q, k, v)]}"
        )
    pos = q.shape[-2]
    n_blocks = -(-pos // window)
    q_blocks = F.pad(q, (0, 0, 0, n_blocks * window - pos)).unflatten(-2, (n_blocks, window))  # (..., n_blocks, w, d)
    k_blocks, v_blocks = _band_blocks(k, window, n_blocks), _band_blocks(v, window, n_blocks)  # (..., n_blocks, 2w, d)
    mask = _band_mask(window, n_blocks, q.device)  # (n_blocks, w, 2w)
    if impl == "fused":
        out = F.scaled_dot_product_attention(q_blocks, k_blocks, v_blocks, attn_mask=mask)
    else:
        scores = q_blocks @ k_blocks.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., n_blocks, w, 2w)
        out = masked_softmax(scores, mask, dim=-1) @ v_blocks  # (..., n_blocks, w, d_head_v)
    return out.flatten(-3, -2)[..., :pos, :]  # (..., pos, d_head_v)


def measure_mask_savings(
    n_ctx: int,
    window: int,
    d_head: int = 64,
    n_heads: int = 1,
    device="cpu",
    repeats: int = 7,
    seed: int = 0,
    cpu_threads: int | None = 1,
) -> dict[str, dict[str, float]]:
    """Time PyTorch's fused attention kernel on one (1, head, n_ctx, d_head) input, four ways.

    ``full``: no mask; ``causal``: ``is_causal=True``, so the kernel knows which tiles are empty and
    can skip them; ``causal_as_table``: the same causal mask passed as a boolean n × n table, which
    the kernel must read cell by cell; ``window``: ``sliding_window_attention(..., impl="fused")``.
    The variants run in turn, ``repeats`` rounds, so a busy machine slows them alike; returns, per
    variant, the median ``seconds`` and the median over rounds of its time ``relative`` to ``full``.
    Threads as in ``measure_attention``. (The batch axis is there because, on the CPU, we measured
    the causal saving only with 4-d (batch, head, pos, d_head) inputs, the layout the tiled kernel expects.)
    """
    positive_int("n_ctx", n_ctx)
    device = torch.device(device)
    with torch_threads(cpu_threads if device.type == "cpu" else None, name="cpu_threads"):
        gen = torch.Generator(device=device).manual_seed(seed)
        q, k, v = torch.randn(
            3, 1, n_heads, n_ctx, d_head, generator=gen, device=device
        )  # 3 × (batch, head, pos, d_head)
        table = causal_mask(n_ctx, device=device)
        runs = {
            "full": lambda: F.scaled_dot_product_attention(q, k, v),
            "causal": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            "causal_as_table": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=table),
            "window": lambda: sliding_window_attention(q, k, v, window, impl="fused"),
        }
        for run in runs.values():
            run()  # warm-up
        rounds = [{name: _seconds(run, device) for name, run in runs.items()} for _ in range(repeats)]
        return {
            name: {
                "seconds": statistics.median(r[name] for r in rounds),
                "relative": statistics.median(r[name] / r["full"] for r in rounds),
            }
            for name in runs
        }


def visited_tiles(mask: Bool[Tensor, "q_pos k_pos"], tile: int = 64) -> float:
    """Share of the (tile × tile) blocks of the score table that hold any allowed cell.

    A tiled kernel that skips empty blocks does this share of the full work:
    ``visited_tiles(causal_mask(4), tile=2)`` -> ``0.75`` (3 of 4 blocks); about ½ for a long causal mask.
    """
    bool_tensor("mask", mask)
    if mask.ndim != 2:
        raise ValueError(f"mask must be 2-d (q_pos, k_pos), got shape {tuple(mask.shape)}")
    positive_int("tile", tile)
    n_q, n_k = -(-mask.shape[0] // tile), -(-mask.shape[1] // tile)
    padded = F.pad(mask, (0, n_k * tile - mask.shape[1], 0, n_q * tile - mask.shape[0]))  # pads with False
    blocks = padded.reshape(n_q, tile, n_k, tile).any(dim=3).any(dim=1)  # (n_q, n_k)
    return blocks.sum().item() / blocks.numel()


def _seconds(run, device: torch.device) -> float:
    _sync(device)
    start = time.perf_counter()
    run()
    _sync(device)
    return time.perf_counter() - start


def _median_seconds(run, device: torch.device, repeats: int) -> float:
    run()  # warm-up
    return statistics.median(_seconds(run, device) for _ in range(repeats))
