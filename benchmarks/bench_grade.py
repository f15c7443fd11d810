"""Benchmark `course-lab grade`: seconds per submission for a folder of copies of a full notebook.

For each notebook named (default: 00_welcome), this measures the notebook's own run time (a plain
nbclient run, kernel start included, median of three; ``--no-own-run`` skips it), then grades a
folder of ``--copies`` copies of the solution notebook with ``--jobs 1`` and ``--jobs 2``, each both
sandboxed (bubblewrap) and with ``--no-sandbox``, all in one process. The runs are paired: for each
``--jobs``, every round grades the folder sandboxed and not, back to back, in alternating order
(round 1 sandboxed first, round 2 plain first, ...), so a change in the machine's load falls on both
alike; the ratio reported is the median of the per-round ratios (sandboxed / not), against the
1.3x target. It prints a Markdown table: seconds per submission (median over rounds), the ratio,
each round's ratio, the ``--jobs 2`` speed-up and full marks. Not run by the tests.

    .venv/bin/python benchmarks/bench_grade.py [--copies 30] [--rounds 2] [--notebooks 00_welcome.ipynb ...]
    .venv/bin/python benchmarks/bench_grade.py --copies 2 --rounds 1 --no-own-run   # a quick smoke run
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

from course_utils.lab.grading.folder import grade_folder
from course_utils.lab.grading.kernel import Limits
from course_utils.lab.grading.sandbox import cgroup_layout, isolation_problem
from course_utils.lab.grading.submissions import default_source


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


TARGET = 1.3  # sandboxed / --no-sandbox, per submission


def paired_runs(path: Path, copies: int, jobs: int, source: Path, rounds: int) -> dict:
    """``rounds`` pairs of gradings (sandboxed and not, alternating which goes first): seconds and full marks."""
    found: dict = {"boxed": [], "plain": [], "ratios": [], "full": {"boxed": [], "plain": []}}
    for number in range(rounds):
        order = ("boxed", "plain") if number % 2 == 0 else ("plain", "boxed")
        times = {}
        for kind in order:
            seconds, full = grade_copies(path, copies, jobs, source, sandbox=kind == "boxed")
            times[kind] = seconds
            found[kind].append(seconds / copies)
            found["full"][kind].append(full)
        found["ratios"].append(times["boxed"] / times["plain"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2, help="paired sandboxed / plain gradings per --jobs")
    parser.add_argument("--jobs", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--no-own-run", action="store_true", help="skip the plain nbclient run of the notebook")
    parser.add_argument("--notebooks", nargs="*", default=["00_welcome.ipynb"], help="file names in notebooks/")
    args = parser.parse_args()
    source = default_source()
    problem = isolation_problem()
    if problem:
        raise SystemExit(f"cannot compare with the sandbox here: {problem}")
    print(f"machine: {os.cpu_count()} CPUs, load average before: {os.getloadavg()[0]:.2f}, "
          f"cgroups: {cgroup_layout() or 'no'}; {args.copies} copies, {args.rounds} paired round(s) per --jobs")
    print("| notebook | own run (s) | jobs | sandboxed: s/submission | --no-sandbox: s/submission "
          "| sandboxed / not (median) | per round | within 1.3x | speed-up vs jobs 1 | full marks |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.notebooks:
        path = source / name
        own = f"{own_run_time(path):.2f}" if not args.no_own_run else "-"
        first = None
        for jobs in args.jobs:
            runs = paired_runs(path, args.copies, jobs, source, args.rounds)
            boxed, plain = statistics.median(runs["boxed"]), statistics.median(runs["plain"])
            ratio = statistics.median(runs["ratios"])
            first = first or {"boxed": boxed, "plain": plain}
            speedup = f"{first['boxed'] / boxed:.2f}x, {first['plain'] / plain:.2f}x"
            full = ", ".join(f"{min(runs['full'][k])}/{args.copies}" for k in ("boxed", "plain"))
            rounds = " ".join(f"{r:.2f}" for r in runs["ratios"])
            print(f"| {name} | {own} | {jobs} | {boxed:.2f} | {plain:.2f} | {ratio:.2f}x | {rounds} | "
                  f"{'yes' if ratio <= TARGET else 'NO'} | {speedup} | {full} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
