"""Notebook 07's balancing lab on many seeds and every numerics path of this CPU: each claim's smallest
margin, the starved experts' first-step counts, and the final losses' spread (benchmarks/RESULTS_moe.md).

    python benchmarks/moe_claims_paths.py --seeds 20

Each path runs in its own process (the SIMD switches are read when torch starts): native, AVX2 forced
where the CPU has AVX-512, and the lowest (``default`` / SSE4.2). About 1 s a seed per path on a quiet
2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from numerics import PATHS, paths_here  # noqa: E402

ONE_PATH = """
import json, sys, torch
from course_utils.moe.experiment import ExperimentConfig, run_experiment
from course_utils.moe.outcomes import claim_margins, starved_experts
out = {"capability": torch.backends.cpu.get_cpu_capability(), "seeds": {}}
for seed in range(int(sys.argv[1])):
    runs = run_experiment(ExperimentConfig(), seed=seed)
    first = runs["none"].shares[0] * runs["none"].shares.new_tensor(512.0)  # assignments at step 1 (256 tokens x 2)
    out["seeds"][seed] = {"margins": claim_margins(runs), "loss": {n: r.eval_loss for n, r in runs.items()},
                          "first_step": [round(float(first[e])) for e in starved_experts(runs["none"])]}
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    for path in paths_here():
        env = {**os.environ, **PATHS[path]}
        done = subprocess.run([sys.executable, "-c", ONE_PATH, str(args.seeds)], env=env, cwd=ROOT,
                              capture_output=True, text=True, check=True)
        result = json.loads(done.stdout)
        seeds = result["seeds"].values()
        print(f"\n## {path} (torch capability {result['capability']}), seeds 0-{args.seeds - 1}")
        for claim in next(iter(seeds))["margins"]:
            smallest = min(s["margins"][claim] for s in seeds)
            held = sum(s["margins"][claim] > 0 for s in seeds)
            print(f"- {claim}: holds on {held} of {args.seeds}, smallest margin {smallest:+.4f}")
        zero = sum(count == 0 for s in seeds for count in s["first_step"])
        starved = sum(len(s["first_step"]) for s in seeds)
        print(f"- starved experts with 0 assignments at step 1: {zero} of {starved}")
        for name in ("none", "aux", "bias"):
            losses = [s["loss"][name] for s in seeds]
            low, median, high = statistics.quantiles(losses, n=4, method="inclusive")
            lower = "" if name == "none" else f"; below none on {sum(s['loss'][name] < s['loss']['none'] for s in seeds)}"
            print(f"- {name}: median {median:.4f}, quartiles {low:.4f}-{high:.4f}, max {max(losses):.4f}{lower}")


if __name__ == "__main__":
    main()
