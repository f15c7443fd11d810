"""Benchmark `course-lab grade`: seconds per submission for a folder of copies of a full notebook.

For each notebook named (default: 00_welcome and the course notebook with the most code cells),
this measures the notebook's own run time (a plain nbclient run, kernel start included, median of
three), then grades a folder of ``--copies`` copies of the solution notebook with ``--jobs 1`` and
``--jobs 2``, and prints a Markdown table: seconds per submission, the grader's overhead above the
notebook's own run time, and the ``--jobs 2`` speed-up. Not run by the tests.

    .venv/bin/python benchmarks/bench_grade.py [--copies 30] [--notebooks 00_welcome.ipynb ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from course_utils.lab.folder import grade_folder
from course_utils.lab.kernel import Limits
from course_utils.lab.submissions import default_source


def own_run_time(path: Path, repeats: int = 3) -> float:
    """Median wall time of a plain nbclient run of ``path`` (kernel start included)."""
    times = []
    for _ in range(repeats):
        nb = nbformat.read(str(path), as_version=4)
        with tempfile.TemporaryDirectory() as cwd:
            start = time.perf_counter()
            NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": cwd}}).execute()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def grade_copies(path: Path, copies: int, jobs: int, source: Path) -> tuple[float, int]:
    """Seconds to grade ``copies`` copies of ``path`` with ``jobs`` workers, and how many got full marks."""
    with tempfile.TemporaryDirectory() as root:
        for i in range(copies):
            folder = Path(root) / f"student{i:03d}"
            folder.mkdir()
            shutil.copy(path, folder / path.name)
        start = time.perf_counter()
        results = grade_folder(Path(root), source, Limits(cell_timeout=300, probe_timeout=60), jobs=jobs, progress=False)
        seconds = time.perf_counter() - start
    full = sum(all(e.points == e.max_points for e in r.exercises) and r.status == "ok" for r in results)
    return seconds, full


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--notebooks", nargs="*", help="file names in notebooks/ (default: 00_welcome and the largest)")
    args = parser.parse_args()
    source = default_source()
    names = args.notebooks
    if not names:
        graded = [p for p in sorted(source.glob("[0-9][0-9]_*.ipynb"))
                  if nbformat.read(str(p), as_version=4).metadata.get("course", {}).get("exercises")]
        largest = max(graded, key=lambda p: sum(c.cell_type == "code" for c in nbformat.read(str(p), as_version=4).cells))
        names = list(dict.fromkeys(["00_welcome.ipynb", largest.name]))
    print(f"machine: {os.cpu_count()} CPUs, load average before: {os.getloadavg()[0]:.2f}")
    print("| notebook | own run (s) | jobs 1: s/submission | overhead (s) | jobs 2: s/submission | speed-up | full marks |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        path = source / name
        own = own_run_time(path)
        t1, full1 = grade_copies(path, args.copies, 1, source)
        t2, full2 = grade_copies(path, args.copies, 2, source)
        per1, per2 = t1 / args.copies, t2 / args.copies
        print(f"| {name} | {own:.2f} | {per1:.2f} | {per1 - own:+.2f} | {per2:.2f} | {t1 / t2:.2f}x | "
              f"{full1}/{args.copies}, {full2}/{args.copies} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
