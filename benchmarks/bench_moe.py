"""MoE dispatch on CPU: the per-token loop against grouped dispatch and dense dispatch.

Not a test: run it by hand, ``python benchmarks/bench_moe.py``, and paste the table into
benchmarks/RESULTS_moe.md. One layer of E = 8 SwiGLU experts, top-2, float32, no gradient; two
widths: the notebook's toy (d_model 16, d_mlp 16) and a small real-ish one (d_model 256, d_mlp 1024).
Each timing is the median of ``--repeats`` runs; the three versions are timed in turn, side by side
in one process, so a busy shared machine slows them alike. Also times one training step of the
notebook's experiment (dense dispatch, Adam) on one thread.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import torch

from course_utils.moe import layer as moe
from course_utils.moe.experiment import ExperimentConfig, train_moe


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_dispatch(tokens: int, d_model: int, d_mlp: int, repeats: int, naive: bool) -> dict:
    torch.manual_seed(0)
    layer = moe.MoE(d_model, d_mlp, 8, 2, init_std=0.1)
    x = torch.randn(tokens, d_model)
    with torch.no_grad():
        r = layer.route(x)
        row = {"grouped": _median_seconds(lambda: moe.dispatch_grouped(x, r.indices, r.gates, layer.experts), repeats),
               "dense": _median_seconds(lambda: moe.dispatch_dense(x, r.indices, r.gates, layer.W_gate, layer.W_in,
                                                                   layer.W_out), repeats)}
        if naive:
            row["naive"] = _median_seconds(lambda: moe.dispatch_naive(x, r.indices, r.gates, layer.experts), max(1, repeats // 3))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: steadier on a shared machine)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| d_model / d_mlp | tokens | per-token loop (ms) | grouped (ms) | dense (ms) | loop / grouped | dense / grouped |")
    print("|---|---|---|---|---|---|---|")
    for d_model, d_mlp in ((16, 16), (256, 1024)):
        for tokens in (256, 2048):
            row = bench_dispatch(tokens, d_model, d_mlp, args.repeats, naive=tokens <= 256)
            loop = f"{row['naive'] * 1e3:.1f}" if "naive" in row else "-"
            ratio = f"{row['naive'] / row['grouped']:.0f}x" if "naive" in row else "-"
            print(f"| {d_model} / {d_mlp} | {tokens} | {loop} | {row['grouped'] * 1e3:.2f} | {row['dense'] * 1e3:.2f} "
                  f"| {ratio} | {row['dense'] / row['grouped']:.2f} |")
    cfg = replace(ExperimentConfig(), steps=50)
    times = [_median_seconds(lambda: train_moe(cfg, "aux", seed=0), 1) / cfg.steps for _ in range(3)]
    print(f"\nexperiment: {statistics.median(times) * 1e3:.1f} ms per training step (median of 3 runs of {cfg.steps} steps; "
          f"the notebook runs 3 x {ExperimentConfig().steps} steps and 12 x 60 smaller ones)")


if __name__ == "__main__":
    main()
