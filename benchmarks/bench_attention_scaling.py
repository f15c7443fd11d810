"""How attention's time and memory grow with the sequence length T (notebook 04's n² section).

Not a test: run it by hand, ``.venv/bin/python benchmarks/bench_attention_scaling.py``, and paste
the table into benchmarks/RESULTS_masking.md.

Method
* One head, d_head = 64, float32, causal mask, batch 1; T = 512 ... 8192 (doubling).
* Both implementations of ``course_utils.attention.dot_product.scaled_dot_product_attention``: the readable
  reference (builds the whole T × T pattern) and ``impl="fused"`` (PyTorch's kernel).
* Every (implementation, T) runs in a fresh child process on one CPU thread, so a busy shared
  machine disturbs the numbers less and one run's memory cannot hide another's.
* Time: median of ``--repeats`` calls after one warm-up call. Memory: the child's peak resident set
  size during its first call minus its resident size just before (``ru_maxrss`` minus ``psutil``),
  i.e. the extra memory one call needs.
* Exponent: least-squares slope of log(time) and log(memory) against log(T) over the lengths
  (``course_utils.attention.scaling.fit_exponent``); 2 means quadratic.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import statistics
import time

LENGTHS = (512, 1024, 2048, 4096, 8192)


def _child(impl: str, T: int, repeats: int, queue) -> None:
    import psutil
    import torch

    from course_utils.attention.dot_product import scaled_dot_product_attention
    from course_utils.masking import causal_mask

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(T)
    q, k, v = (torch.randn(1, 1, T, 64, generator=gen) for _ in range(3))  # (batch, head, pos, d_head)
    mask = causal_mask(T)
    with torch.inference_mode():
        scaled_dot_product_attention(q[..., :8, :], k[..., :8, :], v[..., :8, :], mask[:8, :8], impl=impl)  # load kernels
        before = psutil.Process().memory_info().rss
        scaled_dot_product_attention(q, k, v, mask, impl=impl)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            scaled_dot_product_attention(q, k, v, mask, impl=impl)
            times.append(time.perf_counter() - start)
    queue.put({"seconds": statistics.median(times), "extra_bytes": max(peak - before, 0)})


def measure(impl: str, T: int, repeats: int) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(impl, T, repeats, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main() -> None:
    from course_utils.attention.scaling import fit_exponent

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = {impl: [measure(impl, T, args.repeats) for T in LENGTHS] for impl in ("reference", "fused")}
    print("| T | reference ms | × previous | reference extra MiB | fused ms | × previous | fused extra MiB |")
    print("|---|---|---|---|---|---|---|")
    for i, T in enumerate(LENGTHS):
        cells = [f"{T:,}"]
        for impl in ("reference", "fused"):
            r = rows[impl][i]
            ratio = f"{r['seconds'] / rows[impl][i - 1]['seconds']:.1f}×" if i else "–"
            cells += [f"{1000 * r['seconds']:.1f}", ratio, f"{r['extra_bytes'] / 2**20:.0f}"]
        print("| " + " | ".join(cells) + " |")
    for impl in ("reference", "fused"):
        t_exp = fit_exponent(LENGTHS, [r["seconds"] for r in rows[impl]])
        big = [(T, r["extra_bytes"]) for T, r in zip(LENGTHS, rows[impl]) if r["extra_bytes"] > 0]
        m_exp = fit_exponent([T for T, _ in big], [b for _, b in big]) if len(big) >= 2 else float("nan")
        print(f"{impl}: time exponent {t_exp:.2f}, memory exponent {m_exp:.2f}")


if __name__ == "__main__":
    main()
