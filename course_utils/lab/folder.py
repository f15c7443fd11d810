"""Grade a whole folder of submissions, ``jobs`` at a time, each in its own worker process.

Unreadable files and notebooks that match no course notebook get their row here without a kernel.
Every other submission goes to one of ``jobs`` long-lived ``course_utils.lab.worker --serve``
processes; a worker that crashes, is killed, or runs past the submission's overall time budget
yields a ``grader_error`` row (it and its kernel are killed and a fresh worker takes the next
submission), and the folder carries on. A tqdm bar shows progress.

Leaves out: the per-submission grading (``grade.py``) and the files written (``gradebook.py``).
"""

from __future__ import annotations

import json
import os
import queue
import select
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path

import psutil
from tqdm.auto import tqdm

from course_utils.checks import all_exercises
from course_utils.lab.grade import ExerciseResult, SubmissionResult
from course_utils.lab.hidden import load_hidden_tests
from course_utils.lab.kernel import GRACE_S, Limits
from course_utils.lab.submissions import (CourseNotebook, Submission, course_catalog, find_submissions,
                                          identify, read_submission)

CASES_PER_EXERCISE_BUDGET = 40  # probes budgeted per exercise when sizing a worker's time limit


def _rows(points: dict, status: str, feedback: str) -> list[ExerciseResult]:
    return [ExerciseResult(name, 0, p, status, feedback) for name, p in points.items()]


def make_job(sub: Submission, entry: CourseNotebook, limits: Limits, seeds: list[int], hidden: Path | None,
             result: Path) -> dict:
    """The JSON a worker reads: which file, which notebook and points, the limits, where to write."""
    return {"path": str(sub.path.resolve()), "student": sub.student, "rel": sub.rel, "notebook": entry.name,
            "points": entry.points, "limits": asdict(limits), "seeds": list(seeds),
            "hidden_tests": str(hidden.resolve()) if hidden else None, "result": str(result)}


def _budget(n_cells: int, n_exercises: int, limits: Limits) -> float:
    return (120 + n_cells * (limits.cell_timeout + GRACE_S)
            + n_exercises * CASES_PER_EXERCISE_BUDGET * (limits.probe_timeout + GRACE_S))


def _kill_tree(pid: int) -> None:
    try:
        parent = psutil.Process(pid)
        procs = parent.children(recursive=True) + [parent]
    except psutil.Error:
        return
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass


class _Worker:
    """One ``course_utils.lab.worker --serve`` process, restarted after it fails or overruns."""

    def __init__(self, scratch: str):
        self.proc: subprocess.Popen | None = None
        self.scratch = scratch  # TMPDIR of the worker and its kernels: removed with the job folder

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, "-m", "course_utils.lab.worker", "--serve"],
                                         env=dict(os.environ, TMPDIR=self.scratch),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self.proc

    def stop(self) -> None:
        if self.proc is not None:
            _kill_tree(self.proc.pid)
            self.proc.wait()
            self.proc = None

    def grade(self, job: dict, job_file: Path, budget: float) -> SubmissionResult:
        job_file.write_text(json.dumps(job))
        failed = SubmissionResult(job["student"], job["rel"], job["notebook"], "grader_error")
        proc = self._start()
        deadline, line, why = time.monotonic() + budget, b"", "the grading process died"
        try:
            proc.stdin.write(f"{job_file}\n".encode())
            proc.stdin.flush()
            while line.strip() != b"DONE":
                ready, _, _ = select.select([proc.stdout], [], [], max(deadline - time.monotonic(), 0))
                if not ready:
                    why = f"grading stopped after its {budget:.0f} s budget"
                    break
                line = proc.stdout.readline()
                if not line:
                    break
        except OSError:
            line = b""
        if line.strip() != b"DONE":
            self.stop()
            failed.exercises = _rows(job["points"], "grader_error", why)
            return failed
        try:
            return SubmissionResult.from_json(json.loads(Path(job["result"]).read_text()))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            failed.exercises = _rows(job["points"], "grader_error", f"unreadable result ({type(exc).__name__})")
            return failed


def grade_folder(folder: Path, source: Path, limits: Limits, seeds: list[int] = (1, 2),
                 hidden_tests: Path | None = None, jobs: int = 1, progress: bool = True) -> list[SubmissionResult]:
    """Grade every submission in ``folder``; always one ``SubmissionResult`` per submitted file."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    catalog = course_catalog(source)
    load_hidden_tests(hidden_tests, set(all_exercises()))  # fail before grading if a test file is broken
    submissions = find_submissions(folder)
    results: list[SubmissionResult | None] = [None] * len(submissions)
    pending = []
    for index, sub in enumerate(submissions):
        nb, problem = read_submission(sub.path)
        name = identify(sub, nb, catalog)
        if nb is None:
            rows = _rows(catalog[name].points, "unreadable", problem) if name else [ExerciseResult("", 0, 0, "unreadable", problem)]
            results[index] = SubmissionResult(sub.student, sub.rel, name or "", "unreadable", rows)
        elif name is None:
            results[index] = SubmissionResult(sub.student, sub.rel, "", "unknown_notebook", [ExerciseResult(
                "", 0, 0, "unknown_notebook", "matches no course notebook by file name, metadata or the functions it defines")])
        else:
            n_cells = sum(c.cell_type == "code" for c in nb.cells)
            pending.append((index, sub, catalog[name], _budget(n_cells, len(catalog[name].points), limits)))
    bar = tqdm(total=len(submissions), desc="grading", unit="submission", disable=not progress)
    bar.update(len(submissions) - len(pending))
    job_dir = tempfile.mkdtemp(prefix="course-lab-jobs-")
    workers: queue.Queue = queue.Queue()
    for _ in range(min(jobs, len(pending)) or 1):
        workers.put(_Worker(job_dir))

    def run(job: dict, job_file: Path, budget: float) -> SubmissionResult:
        worker = workers.get()
        try:
            return worker.grade(job, job_file, budget)
        finally:
            workers.put(worker)

    try:
        _grade_pending(pending, submissions, results, run, bar, jobs, limits, seeds, hidden_tests, job_dir)
    finally:
        while not workers.empty():
            workers.get().stop()
        shutil.rmtree(job_dir, ignore_errors=True)
        bar.close()
    return results


def _grade_pending(pending, submissions, results, run, bar, jobs, limits, seeds, hidden_tests, job_dir) -> None:
    with ThreadPoolExecutor(jobs) as pool:
        futures = {}
        for index, sub, entry, budget in pending:
            job = make_job(sub, entry, limits, seeds, hidden_tests, Path(job_dir) / f"result{index}.json")
            futures[pool.submit(run, job, Path(job_dir) / f"job{index}.json", budget)] = index
        for future in as_completed(futures):
            index = futures[future]
            try:
                results[index] = future.result()
            except Exception as exc:  # never lose a row to a fault in the grader itself
                sub, entry = submissions[index], next(p[2] for p in pending if p[0] == index)
                results[index] = SubmissionResult(sub.student, sub.rel, entry.name, "grader_error",
                                                  _rows(entry.points, "grader_error", f"{type(exc).__name__}: {exc}"[:200]))
            bar.update(1)
