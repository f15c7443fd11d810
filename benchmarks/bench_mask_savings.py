"""What a mask saves in PyTorch's fused attention kernel (notebook 04's "kernels that know the mask's
shape" section).

Not a test: run it by hand, ``.venv/bin/python benchmarks/bench_mask_savings.py``, and paste the
table into benchmarks/RESULTS_masking.md.

Method: ``course_utils.attention.scaling.measure_mask_savings`` on one (1, 1, T, 64) float32 input,
one CPU thread: no mask, ``is_causal=True``, the causal mask as a boolean table, and
``sliding_window_attention(..., impl="fused")`` with a window of 128. The four run in turn,
``--repeats`` rounds after a warm-up; the table gives each variant's median time relative to no
mask (median over rounds of the per-round ratio), so load from other jobs mostly cancels. The last
columns are ``visited_tiles`` (64 × 64 tiles) for the causal and the window mask: the share of the
work a tile-skipping kernel must do.
"""

from __future__ import annotations

import argparse

from course_utils.attention.scaling import measure_mask_savings, visited_tiles
from course_utils.masking import causal_mask, sliding_window_mask

LENGTHS = (1024, 2048, 4096, 8192)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--window", type=int, default=128)
    args = parser.parse_args()
    print(f"| T | no mask ms | is_causal × | causal table × | window {args.window} × | causal tiles | window tiles |")
    print("|---|---|---|---|---|---|---|")
    for n in LENGTHS:
        r = measure_mask_savings(n, args.window, repeats=args.repeats)
        print(f"| {n:,} | {1000 * r['full']['seconds']:.1f} | {r['causal']['relative']:.2f} | "
              f"{r['causal_as_table']['relative']:.2f} | {r['window']['relative']:.3f} | "
              f"{visited_tiles(causal_mask(n)):.3f} | {visited_tiles(sliding_window_mask(n, args.window)):.3f} |", flush=True)


if __name__ == "__main__":
    main()
