"""Angle statistics of 4,000 random unit vectors in 12,288 dimensions (~8 million pairs).

Not a test: run it by hand, ``python benchmarks/bench_superposition.py``, and paste the table into
benchmarks/RESULTS_superposition.md. Two versions, timed alternately in one process so a busy
shared machine slows both alike:

* the course's chunked torch path, ``superposition.pairwise_angle_stats`` (blocks of rows against
  the rows after them, so only the upper triangle is computed; RMS, mean |dev|, worst pair and a
  histogram), on the CPU and on
  CUDA when present;
* the one-matmul NumPy float32 version: the full 4,000 × 4,000 Gram matrix, its upper triangle,
  arcsin, RMS and max.

Each reports the median and minimum of ``--repeats`` runs (and the machine's load average before and
after: on a shared machine the minimum is the better guide) and the peak memory it added above the input
(tracemalloc for NumPy; for torch on CPU the growth of the peak resident set (VmHWM, reset just
before) in a fresh child process, since torch's CPU allocator is invisible to tracemalloc; ``torch.cuda.max_memory_allocated`` on GPU).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
import tracemalloc

import numpy as np
import torch

from course_utils.superposition.geometry import pairwise_angle_stats, random_unit_vectors

N, D = 4_000, 12_288


def numpy_one_matmul(v: np.ndarray) -> tuple[float, float]:
    """RMS and max |angle − 90°| (degrees) from the full Gram matrix in one matmul."""
    gram = v @ v.T  # (n, n) float32
    i, j = np.triu_indices(len(v), k=1)
    dev = np.degrees(np.arcsin(np.clip(gram[i, j], -1, 1)))
    return float(np.sqrt(np.mean(dev.astype(np.float64) ** 2))), float(np.abs(dev).max())


def _load_average() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def _peak_rss_child(queue, chunk_size: int) -> None:
    torch.set_num_threads(queue.get())
    v = random_unit_vectors(N, D, seed=0)
    with open("/proc/self/clear_refs", "w") as clear:  # reset the peak (VmHWM) to the current RSS
        clear.write("5")
    before = _status_kib("VmRSS")
    pairwise_angle_stats(v, chunk_size=chunk_size)
    queue.put((_status_kib("VmHWM") - before) / 1024)  # MiB


def torch_cpu_peak_mib(chunk_size: int, threads: int) -> float:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    queue.put(threads)
    child = ctx.Process(target=_peak_rss_child, args=(queue, chunk_size))
    child.start()
    child.join()
    return queue.get()


def numpy_peak_mib(v: np.ndarray) -> float:
    tracemalloc.start()
    numpy_one_matmul(v)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--chunk-size", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = _load_average()
    v = random_unit_vectors(N, D, seed=0)
    v_np = v.numpy()
    runs = {"torch chunked (CPU)": lambda: pairwise_angle_stats(v, chunk_size=args.chunk_size),
            "NumPy one matmul": lambda: numpy_one_matmul(v_np)}
    if torch.cuda.is_available():
        v_gpu = v.cuda()

        def on_gpu():
            stats = pairwise_angle_stats(v_gpu, chunk_size=args.chunk_size)
            torch.cuda.synchronize()
            return stats

        runs["torch chunked (CUDA)"] = on_gpu
    for fn in runs.values():  # warm-up
        fn()
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    stats = pairwise_angle_stats(v, chunk_size=args.chunk_size)
    rms_np, max_np = numpy_one_matmul(v_np)
    peaks = {"torch chunked (CPU)": torch_cpu_peak_mib(args.chunk_size, args.threads), "NumPy one matmul": numpy_peak_mib(v_np)}
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        runs["torch chunked (CUDA)"]()
        peaks["torch chunked (CUDA)"] = (torch.cuda.max_memory_allocated() - base) / 2**20
    print(f"{N:,} vectors x {D:,} dims, {stats.n_pairs:,} pairs, torch {torch.__version__}, {args.threads} thread(s), "
          f"chunk {args.chunk_size}, median of {args.repeats}; load average {load_before} before, {_load_average()} after")
    print(f"RMS deviation: torch {stats.rms_deviation_deg:.5f} deg, NumPy {rms_np:.5f} deg; "
          f"worst pair: torch {stats.max_deviation_deg:.4f} deg, NumPy {max_np:.4f} deg")
    print("| version | median (s) | min (s) | peak extra memory (MiB) |")
    print("|---|---:|---:|---:|")
    for name in runs:
        print(f"| {name} | {statistics.median(times[name]):.3f} | {min(times[name]):.3f} | {peaks[name]:.0f} |")
    ratio = statistics.median(times["torch chunked (CPU)"]) / statistics.median(times["NumPy one matmul"])
    ratio_min = min(times["torch chunked (CPU)"]) / min(times["NumPy one matmul"])
    print(f"torch chunked / NumPy one matmul: {ratio:.2f} (medians), {ratio_min:.2f} (minima)")
    print(json.dumps({name: statistics.median(t) for name, t in times.items()}))


if __name__ == "__main__":
    main()
