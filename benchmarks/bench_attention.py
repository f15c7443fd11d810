"""Reference attention (matmul, softmax, matmul) against PyTorch's fused kernel, on CPU.

Not a test: run it by hand, ``python benchmarks/bench_attention.py``, and paste the table into
benchmarks/RESULTS_attention.md. Shapes: batch 1, 12 heads of d_head = 64 (GPT-2 small's head
shape), sequence lengths T = 128 ... 2048, float32, no mask and a causal mask. Three versions: the
course's reference (input checks + masked_softmax with its zero-row handling), a bare textbook
matmul-softmax-matmul, and torch's fused kernel (impl="fused"). Each timing is the
median of ``--repeats`` runs, and the two implementations are timed alternately, side by side in
one process, so a busy shared machine slows both alike.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch

from course_utils.attention.dot_product import scaled_dot_product_attention


def _time_once(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def plain_attention(q, k, v, mask=None):
    """The bare textbook version (no input checks, torch.softmax, no zero-row handling), for comparison."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (batch, head, q_pos, k_pos)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v  # (batch, head, q_pos, d_head)


def bench(T: int, repeats: int, causal: bool, n_heads: int = 12, d_head: int = 64) -> dict:
    """Median seconds of each implementation for one sequence length."""
    gen = torch.Generator().manual_seed(T)
    q, k, v = (torch.randn(1, n_heads, T, d_head, generator=gen) for _ in range(3))  # (batch, head, pos, d_head)
    mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else None
    run = {impl: (lambda impl=impl: scaled_dot_product_attention(q, k, v, mask, impl=impl))
           for impl in ("reference", "fused")}
    run["plain"] = lambda: plain_attention(q, k, v, mask)
    for fn in run.values():  # warm-up (allocator, thread pool)
        fn()
    times: dict[str, list[float]] = {impl: [] for impl in run}
    with torch.inference_mode():
        for _ in range(repeats):
            for impl, fn in run.items():  # alternate, so both see the same machine load
                times[impl].append(_time_once(fn))
    ref, fused, plain = (statistics.median(times[impl]) for impl in ("reference", "fused", "plain"))
    best_ratio = min(times["reference"]) / min(times["fused"])  # least disturbed by other load
    return {"T": T, "causal": causal, "reference_ms": 1e3 * ref, "fused_ms": 1e3 * fused, "plain_ms": 1e3 * plain,
            "ratio": ref / fused, "plain_ratio": plain / fused, "best_ratio": best_ratio}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512, 1024, 2048])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch 1, 12 heads x 64, float32, "
          f"median of {args.repeats}")
    print("| T | mask | course reference (ms) | plain matmul-softmax-matmul (ms) | fused SDPA (ms) | reference / fused | plain / fused | reference / fused, minima |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for causal in (False, True):
        for T in args.lengths:
            r = bench(T, args.repeats, causal)
            print(f"| {T} | {'causal' if causal else 'none'} | {r['reference_ms']:.2f} | {r['plain_ms']:.2f} | "
                  f"{r['fused_ms']:.2f} | {r['ratio']:.2f}x | {r['plain_ratio']:.2f}x | {r['best_ratio']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
