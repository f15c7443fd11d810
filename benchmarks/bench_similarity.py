"""Benchmark the similarity report on synthetic classes (``tests/similarity_class.py``): 30 students, five of
whom copied a classmate's long answer with every name changed, two independent statements moved and
comments added; every student also answers a short exercise in nearly the same three lines.

For each seed it reports whether the five copied pairs are the five best-scored, the copies' lowest
score, the best honest pair's score, how many pairs the report lists for the long and the short
exercise, and the seconds taken (435 pairs). Not run by the tests (the tests check seeds 0 and 1).

    .venv/bin/python benchmarks/bench_similarity.py [--seeds 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from course_utils.lab.grading.similarity import pair_scores, similar_pairs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from similarity_class import STARTER, synthetic_class  # noqa: E402

SHORT_STARTER = "def stable_softmax(x):\n    raise NotImplementedError('subtract the maximum, exponentiate, normalise')\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    print("| seed | copies ranked 1-5 | lowest copy | best honest | listed (long) | listed (short) | seconds |")
    print("|---|---|---|---|---|---|---|")
    first = 0
    for seed in range(args.seeds):
        long, short, copied = synthetic_class(seed)
        start = time.perf_counter()
        scores = sorted(pair_scores(long, STARTER), key=lambda t: -t[0])
        listed = similar_pairs(long, STARTER, "bpe_train")
        seconds = time.perf_counter() - start
        top = sorted((a, b) for _, a, b, _ in scores[:5])
        copies = [s for s, a, b, _ in scores if (a, b) in copied]
        honest = [s for s, a, b, _ in scores if (a, b) not in copied]
        short_listed = similar_pairs(short, SHORT_STARTER, "stable_softmax")
        first += top == sorted(copied)
        print(f"| {seed} | {'yes' if top == sorted(copied) else 'no'} | {min(copies):.2f} | {max(honest):.2f} | "
              f"{len(listed)} | {len(short_listed)} | {seconds:.2f} |")
    print(f"\ncopied pairs ranked first in {first} of {args.seeds} classes")


if __name__ == "__main__":
    main()
