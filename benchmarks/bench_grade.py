"""Benchmark `course-lab grade`: seconds per submission for a folder of copies of a full notebook.

For each notebook named (default: 00_welcome), this measures the notebook's own run time (a plain
nbclient run, kernel start included, median of three), then grades a folder of ``--copies`` copies
of the solution notebook with ``--jobs 1`` and ``--jobs 2``, each both sandboxed (bubblewrap) and
with ``--no-sandbox``, in one process, the four runs interleaved, and prints a Markdown table:
seconds per submission, the sandbox's cost (sandboxed / not), and the ``--jobs 2`` speed-up. Not run
by the tests.

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
from course_utils.lab.sandbox import cgroups_writable
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


def grade_copies(path: Path, copies: int, jobs: int, source: Path, sandbox: bool) -> tuple[float, int]:
    """Seconds to grade ``copies`` copies of ``path`` with ``jobs`` workers, and how many got full marks."""
    with tempfile.TemporaryDirectory() as root:
        for i in range(copies):
            folder = Path(root) / f"student{i:03d}"
            folder.mkdir()
            shutil.copy(path, folder / path.name)
        limits = Limits(cell_timeout=300, probe_timeout=60, sandbox=sandbox)
        start = time.perf_counter()
        run = grade_folder(Path(root), source, limits, jobs=jobs, progress=False)
        seconds = time.perf_counter() - start
    full = sum(all(e.points == e.max_points for e in r.exercises) and r.status == "ok" for r in run.results)
    return seconds, full


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--notebooks", nargs="*", default=["00_welcome.ipynb"], help="file names in notebooks/")
    args = parser.parse_args()
    source = default_source()
    print(f"machine: {os.cpu_count()} CPUs, load average before: {os.getloadavg()[0]:.2f}, "
          f"cgroups: {'yes' if cgroups_writable() else 'no'}")
    print("| notebook | own run (s) | jobs | sandboxed: s/submission | --no-sandbox: s/submission | sandboxed / not | full marks |")
    print("|---|---|---|---|---|---|---|")
    for name in args.notebooks:
        path = source / name
        own = own_run_time(path)
        for jobs in (1, 2):
            boxed, full_boxed = grade_copies(path, args.copies, jobs, source, sandbox=True)
            plain, full_plain = grade_copies(path, args.copies, jobs, source, sandbox=False)
            print(f"| {name} | {own:.2f} | {jobs} | {boxed / args.copies:.2f} | {plain / args.copies:.2f} | "
                  f"{boxed / plain:.2f}x | {full_boxed}/{args.copies}, {full_plain}/{args.copies} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
