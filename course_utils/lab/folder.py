"""Grade a whole folder of submissions, ``jobs`` at a time, each in its own worker process.

Unreadable files and notebooks that match no course notebook get their row here without a kernel.
Every other submission is graded by ``python -m course_utils.lab.worker``; a worker that crashes,
is killed, or runs past its overall time budget yields a ``grader_error`` row (its kernel and any
other children are killed), and the folder carries on. A tqdm bar shows progress.

Leaves out: the per-submission grading (``grade.py``) and the files written (``gradebook.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
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


def _run_worker(job: dict, job_dir: Path, index: int, budget: float) -> SubmissionResult:
    job_file = job_dir / f"job{index}.json"
    job_file.write_text(json.dumps(job))
    result_file = Path(job["result"])
    failed = SubmissionResult(job["student"], job["rel"], job["notebook"], "grader_error")
    proc = subprocess.Popen([sys.executable, "-m", "course_utils.lab.worker", str(job_file)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        _, stderr = proc.communicate(timeout=budget)
    except subprocess.TimeoutExpired:
        _kill_tree(proc.pid)
        proc.communicate()
        failed.exercises = _rows(job["points"], "grader_error", f"grading stopped after its {budget:.0f} s budget")
        return failed
    finally:
        _kill_tree(proc.pid)  # a kernel left behind by a worker that died
    try:
        return SubmissionResult.from_json(json.loads(result_file.read_text()))
    except (OSError, ValueError, TypeError, KeyError):
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        failed.exercises = _rows(job["points"], "grader_error", f"the grading process failed: {tail[0][:200]}")
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
    with tempfile.TemporaryDirectory(prefix="course-lab-jobs-") as job_dir, ThreadPoolExecutor(jobs) as pool:
        futures = {}
        for index, sub, entry, budget in pending:
            job = make_job(sub, entry, limits, seeds, hidden_tests, Path(job_dir) / f"result{index}.json")
            futures[pool.submit(_run_worker, job, Path(job_dir), index, budget)] = index
        for future in as_completed(futures):
            index = futures[future]
            try:
                results[index] = future.result()
            except Exception as exc:  # never lose a row to a fault in the grader itself
                sub, entry = submissions[index], next(p[2] for p in pending if p[0] == index)
                results[index] = SubmissionResult(sub.student, sub.rel, entry.name, "grader_error",
                                                  _rows(entry.points, "grader_error", f"{type(exc).__name__}: {exc}"[:200]))
            bar.update(1)
    bar.close()
    return results
