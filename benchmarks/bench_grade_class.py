"""Grading a large class (issue #41.6): `course-lab grade --jobs N` on a folder of copies of notebook 00.

The class is ``--submissions`` copies of the solution notebook ``notebooks/00_welcome.ipynb``, renamed
per student (``student000.ipynb``, ...; the grader tells the notebook by its metadata), in a temporary
folder. Each run is the real command in a subprocess, sandboxed as an instructor runs it:
``course-lab grade SUBS --out grades.csv --jobs N --assignment 00_welcome --quiet``. Measured per run:

- wall time from start to exit, and wall seconds per submission;
- CPU-seconds (user + system) of the grader and every process below it (workers, sandboxes,
  kernels), each process's last sampled value summed (a process's last ``SAMPLE_SECONDS`` or less
  are missed; ``os.wait4``'s usage would miss the sandboxed kernels, which are never waited for);
- peak memory: the most resident memory (RSS) of the grader and all its descendants together,
  sampled every ``SAMPLE_SECONDS`` (shared library pages count once per process, so this is an
  upper bound on what they need together), and the largest single process (also sampled);
- the gradebook: every student has exactly one row per exercise of 00 with full points and status
  ``ok``, and one ``TOTAL`` row with full points; anything else is listed and the script exits 1.

``--kill-at F`` also runs the grader a second way: it is killed (SIGKILL) once ``F`` of the
submissions are in its journal (``.grades.csv.journal``), then the same command runs again; the
rerun must take every journal entry back ("resumed: K result(s)", K = the complete lines the killed
run left) and the gradebook must hold every submission exactly once with the full score. Wall and
CPU time of that row add both runs. Every wait is bounded (``RUN_SECONDS`` per grader run) and the
script stops by itself; it prints one Markdown row per (jobs, mode), median over ``--repeats``.

    .venv/bin/python benchmarks/bench_grade_class.py --submissions 200 --jobs 1 2 [--kill-at 0.5] [--repeats 1]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "notebooks" / "00_welcome.ipynb"
ASSIGNMENT = "00_welcome"
SAMPLE_SECONDS = 0.2  # memory sampling and journal polling period
RUN_SECONDS = 3 * 3600  # one grader run at most (200 submissions: 16-19 minutes at --jobs 1, load 4.6-6.8)


@dataclass
class GraderRun:
    """One grader process (and its tree), from start to exit."""

    code: int
    stdout: str
    wall_s: float
    cpu_s: float
    peak_tree_mib: float
    peak_process_mib: float
    load: list[float] = field(default_factory=list)  # 1-minute load average, sampled every second
    journal_entries: int | None = None  # complete journal lines when it was killed (None: not killed)


def build_class(folder: Path, count: int, notebook: Path = SOLUTION) -> list[str]:
    """``count`` copies of ``notebook`` as ``folder/studentNNN.ipynb``; the students' names.

    ``build_class(Path('subs'), 3)`` -> ``['student000', 'student001', 'student002']``."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"student{i:03d}" for i in range(count)]
    for name in names:
        shutil.copyfile(notebook, folder / f"{name}.ipynb")
    return names


def grade_command(subs: Path, out: Path, jobs: int) -> list[str]:
    """The ``course-lab grade`` command line for ``subs`` into ``out``."""
    return [sys.executable, "-m", "course_utils.lab.cli", "grade", str(subs), "--out", str(out), "--jobs", str(jobs),
            "--assignment", ASSIGNMENT, "--source", str(SOLUTION.parent), "--quiet"]


def journal_of(out: Path) -> Path:
    """Where ``course-lab grade --out out`` keeps its journal (``cli.py``)."""
    return out.with_name(f".{out.name}.journal")


def journal_entries(journal: Path) -> int:
    """Complete, readable lines of a journal (a line cut short by a kill does not count)."""
    if not journal.exists():
        return 0
    count = 0
    for line in journal.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
        try:
            count += line.endswith("\n") and "key" in json.loads(line)
        except ValueError:
            continue
    return count


def _sample(proc: psutil.Process, cpu: dict[tuple[int, float], float]) -> tuple[float, float]:
    """(sum, largest) RSS in MiB of ``proc`` and its descendants now; records each one's CPU-seconds so far in
    ``cpu`` (keyed by pid and start time, so a reused pid is another process). Vanished ones are skipped."""
    sizes = []
    try:
        family = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0.0, 0.0
    for member in family:
        try:
            with member.oneshot():
                sizes.append(member.memory_info().rss / 2**20)
                times = member.cpu_times()
                cpu[(member.pid, member.create_time())] = times.user + times.system
        except psutil.Error:
            continue
    return sum(sizes), max(sizes, default=0.0)


def run_grader(command: list[str], kill_after: int | None = None, journal: Path | None = None,
               limit_s: float = RUN_SECONDS) -> GraderRun:
    """Run ``command`` to its end, sampling its tree's memory; with ``kill_after``, SIGKILL it as soon as
    ``journal`` holds that many entries. ``TimeoutError`` (its tree killed) past ``limit_s``."""
    if kill_after is not None and journal is None:
        raise ValueError("kill_after needs the journal to watch")
    with tempfile.TemporaryFile("w+") as log:
        start = time.monotonic()
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        tree = psutil.Process(proc.pid)
        peak_tree = peak_one = 0.0
        cpu: dict[tuple[int, float], float] = {}
        load, next_load, killed = [], start, False
        while not killed:
            if time.monotonic() - start > limit_s:
                for member in [*tree.children(recursive=True), tree]:
                    member.kill()
                proc.wait()
                raise TimeoutError(f"the grader ran past {limit_s:.0f} s: {' '.join(command)}")
            done, status, _ = os.wait4(proc.pid, os.WNOHANG)
            if done:
                break
            now_sum, now_one = _sample(tree, cpu)
            peak_tree, peak_one = max(peak_tree, now_sum), max(peak_one, now_one)
            if time.monotonic() >= next_load:
                load.append(os.getloadavg()[0])
                next_load += 1.0
            if kill_after is not None and journal_entries(journal) >= kill_after:
                proc.send_signal(signal.SIGKILL)
                killed = True
            time.sleep(SAMPLE_SECONDS)
        if killed:
            _, status, _ = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        wall = time.monotonic() - start
        log.seek(0)
        stdout = log.read()
    killed = killed and os.WIFSIGNALED(status)  # not when it finished just before the signal
    return GraderRun(proc.returncode, stdout, wall, sum(cpu.values()), peak_tree, peak_one, load,
                     journal_entries(journal) if killed else None)


def full_points(notebook: Path = SOLUTION) -> dict[str, float]:
    """``{exercise: points}`` of the course notebook that ``notebook`` is a copy of."""
    from course_utils.lab.grading.submissions import course_catalog

    return dict(course_catalog(SOLUTION.parent)[notebook.name].points)


def gradebook_problems(out: Path, students: list[str], points: dict[str, float]) -> list[str]:
    """What is wrong with ``out`` for a class where every student handed in the solution: each must have
    exactly one ``ok`` row per exercise with its full points and one ``TOTAL`` row with the sum."""
    if not out.exists():
        return [f"no gradebook at {out}"]
    seen: dict[tuple[str, str], list[dict]] = {}
    for row in csv.DictReader(out.open(encoding="utf-8")):
        seen.setdefault((row["student"], row["exercise"]), []).append(row)
    expected = {**points, "TOTAL": sum(points.values())}
    found = []
    for student in students:
        for exercise, best in expected.items():
            rows = seen.pop((student, exercise), [])
            if len(rows) != 1:
                found.append(f"{student} {exercise}: {len(rows)} row(s)")
            elif float(rows[0]["points"]) != best or rows[0]["status"] != "ok":
                found.append(f"{student} {exercise}: {rows[0]['points']} points, {rows[0]['status']}")
    found += [f"unexpected row(s) {key}: {len(rows)}" for key, rows in sorted(seen.items())]
    return found


def resumed_count(stdout: str) -> int:
    """K from the summary's "resumed: K result(s)" line (0 when there is none)."""
    match = re.search(r"^resumed: (\d+) result", stdout, re.MULTILINE)
    return int(match.group(1)) if match else 0


@dataclass
class ClassRun:
    """A graded class: the grader run(s) and what the gradebook showed."""

    runs: list[GraderRun]
    problems: list[str]
    resumed: int = 0

    @property
    def wall_s(self) -> float:
        return sum(r.wall_s for r in self.runs)

    @property
    def cpu_s(self) -> float:
        return sum(r.cpu_s for r in self.runs)


def grade_class(root: Path, count: int, jobs: int, kill_at: float | None = None,
                notebook: Path = SOLUTION) -> ClassRun:
    """Grade ``count`` copies of ``notebook`` in ``root`` with ``--jobs jobs``; with ``kill_at``, kill the
    grader once that fraction is in its journal and run it again. Problems: the gradebook's, a failed
    run, and (with ``kill_at``) a rerun that did not take back every entry the killed run journaled."""
    if kill_at is not None and not 0 < kill_at < 1:
        raise ValueError(f"kill_at must be a fraction between 0 and 1, got {kill_at}")
    subs, out = root / "subs", root / "out" / "grades.csv"
    students = build_class(subs, count, notebook)
    command = grade_command(subs, out, jobs)
    runs, problems = [], []
    if kill_at is not None:
        kill_after = max(1, round(kill_at * count))
        first = run_grader(command, kill_after, journal_of(out))
        runs.append(first)
        if first.journal_entries is None:
            problems.append(f"the grader finished (exit {first.code}) before {kill_after} results were journaled")
    runs.append(run_grader(command))
    last = runs[-1]
    if last.code != 0:
        problems.append(f"the grader exited {last.code}: {last.stdout[-1000:]}")
    resumed = resumed_count(last.stdout)
    if kill_at is not None and runs[0].journal_entries is not None and resumed != runs[0].journal_entries:
        journaled = runs[0].journal_entries
        problems.append(f"the rerun resumed {resumed} result(s), the killed run had journaled {journaled}")
    problems += gradebook_problems(out, students, full_points(notebook))
    return ClassRun(runs, problems, resumed)


def _row(count: int, jobs: int, kill_at: float | None, found: list[ClassRun]) -> str:
    def med(values) -> float:
        return statistics.median(values)

    wall = med([c.wall_s for c in found])
    load = [x for c in found for r in c.runs for x in r.load]
    killed = "-" if kill_at is None else f"{kill_at:g} ({', '.join(str(c.runs[0].journal_entries) for c in found)})"
    bad = sum(len(c.problems) for c in found)
    return (f"| {count} | {jobs} | {killed} | {len(found)} | {wall:.1f} | {wall / count:.2f} "
            f"| {med([c.cpu_s for c in found]):.0f} | {med([c.cpu_s for c in found]) / count:.2f} "
            f"| {med([max(r.peak_tree_mib for r in c.runs) for c in found]):.0f} "
            f"| {med([max(r.peak_process_mib for r in c.runs) for c in found]):.0f} "
            f"| {', '.join(str(c.resumed) for c in found)} | {'complete' if not bad else f'{bad} problem(s)'} "
            f"| {min(load, default=0):.1f} / {med(load) if load else 0:.1f} / {max(load, default=0):.1f} |")


HEADER = ("| submissions | jobs | killed at (journaled) | runs | wall s (median) | s / submission | CPU-s "
          "| CPU-s / submission | peak RSS, tree (MiB) | peak RSS, one process (MiB) | resumed "
          "| gradebook | load 1-min min / median / max |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--kill-at", type=float, help="also kill each grader at this fraction and resume it")
    parser.add_argument("--kill-only", action="store_true", help="only the killed-and-resumed runs")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    if not 1 <= args.submissions <= 2000 or not 1 <= args.repeats <= 10 or min(args.jobs) < 1:
        parser.error("--submissions must be 1-2000, --repeats 1-10, --jobs at least 1")
    modes = ([] if args.kill_only else [None]) + ([args.kill_at] if args.kill_at is not None else [])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()}, commit {commit.stdout.strip()}")
    print(HEADER, flush=True)
    failed = []
    for jobs in args.jobs:
        for kill_at in modes:
            found = []
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory(prefix="bench-grade-class-") as root:
                    found.append(grade_class(Path(root), args.submissions, jobs, kill_at))
            print(_row(args.submissions, jobs, kill_at, found), flush=True)
            failed += [p for c in found for p in c.problems]
    for problem in failed[:50]:
        print(f"problem: {problem}")
    print(f"load average after: {os.getloadavg()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
