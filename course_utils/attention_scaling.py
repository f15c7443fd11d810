"""How attention's cost grows with the sequence length n_ctx: counted, then measured.

Covers ``pair_counts`` (the n² table relative to a baseline length), ``measure_attention``
(median wall time of ``scaled_dot_product_attention`` and the bytes of the pattern it builds,
on any device; on CUDA also the peak memory allocated) and ``fit_exponent`` (the slope of a
log-log fit, ≈ 2 for a cost that grows as n²). Leaves out memory-efficient kernels that never
build the pattern (the fused path on a GPU), which is exactly why they exist.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Sequence

import torch

from course_utils.attention import attention_pattern
from course_utils.masking import causal_mask


def pair_counts(lengths: Sequence[int], baseline: int | None = None) -> list[dict]:
    """Token-to-token pairs and cost relative to the first length:
    ``pair_counts([1000, 4000])`` -> ``[{'n_ctx': 1000, 'pairs': 1000000, 'relative': 1.0}, {... 'relative': 16.0}]``."""
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in lengths):
        raise ValueError(f"lengths must be positive ints, got {list(lengths)}")
    base = (baseline or lengths[0]) ** 2
    return [{"n_ctx": n, "pairs": n * n, "relative": n * n / base} for n in lengths]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_attention(n_ctx_values: Sequence[int], d_head: int = 64, n_heads: int = 1, device="cpu",
                      repeats: int = 5, seed: int = 0, cpu_threads: int | None = 1) -> list[dict]:
    """Time the readable attention (scores, causal mask, softmax, weighted sum) for each length.

    Returns one dict per length: ``n_ctx``, ``seconds`` (median of ``repeats`` runs after a warm-up),
    ``pattern_bytes`` (size of the (head, q_pos, k_pos) pattern tensor actually built) and, on CUDA,
    ``peak_bytes`` (torch.cuda.max_memory_allocated during one run). On the CPU the timing runs on
    ``cpu_threads`` threads (restored afterwards; None = leave as is): on a small shared machine one
    thread gives much steadier numbers than several competing ones.
    """
    device = torch.device(device)
    threads_before = torch.get_num_threads()
    if device.type == "cpu" and cpu_threads is not None:
        torch.set_num_threads(cpu_threads)
    try:
        return _measure(n_ctx_values, d_head, n_heads, device, repeats, seed)
    finally:
        torch.set_num_threads(threads_before)


def _measure(n_ctx_values, d_head, n_heads, device, repeats, seed) -> list[dict]:
    gen = torch.Generator(device=device).manual_seed(seed)
    results = []
    for n in n_ctx_values:
        q, k, v = torch.randn(3, n_heads, n, d_head, generator=gen, device=device)  # 3 × (head, pos, d_head)
        mask = causal_mask(n, device=device)

        def run():
            pattern = attention_pattern(q, k, mask)  # (head, q_pos, k_pos)
            return pattern, pattern @ v

        pattern, _ = run()  # warm-up
        _sync(device)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            _sync(device)
            times.append(time.perf_counter() - start)
        row = {"n_ctx": n, "seconds": statistics.median(times), "pattern_bytes": pattern.numel() * pattern.element_size()}
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
