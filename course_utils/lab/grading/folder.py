"""Grade a whole folder of submissions, ``jobs`` at a time, each in its own worker process.

Unreadable files, links and notebooks that match no course notebook get their row here without a
kernel. Every other submission goes to one of ``jobs`` long-lived worker processes (``pool.py``);
a worker that crashes, is killed, or runs past the submission's overall time budget yields a
``grader_error`` row, and the folder carries on. A tqdm bar shows progress.

Each finished result is appended at once to a journal (``journal.py``), so running the same command
again after the grader was killed grades only what the journal lacks. The job folder lives beside
the journal and is removed at the end (a killed run's is removed by the next).

Leaves out: the per-submission grading (``grade.py``) and the files written (``gradebook.py``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from course_utils.checks import all_exercises
from course_utils.lab.grading.hidden import case_key, load_hidden_tests
from course_utils.lab.grading.journal import Journal, digest_files, job_key, read_journal
from course_utils.lab.limits import Limits
from course_utils.lab.grading.plan import check_seeds
from course_utils.lab.grading.pool import WorkerPool
from course_utils.lab.results import ExerciseResult, SubmissionResult, zero_rows
from course_utils.lab.grading.sandbox import cgroups_writable, sweep_stale_cgroups
from course_utils.lab.grading.submissions import (
    CourseNotebook,
    Submission,
    course_catalog,
    find_submissions,
    read_submission,
)
from course_utils.lab.grading.identify import identify
from course_utils.lab.status import Status


@dataclass
class FolderRun:
    """What ``grade_folder`` returns: a result per submission, warning lines, how many came from the journal."""

    results: list[SubmissionResult]
    warnings: list[str] = field(default_factory=list)
    resumed: int = 0


def make_job(
    sub: Submission,
    entry: CourseNotebook,
    limits: Limits,
    seeds: list[int],
    hidden: Path | None,
    result: Path,
    secrets: list[str] = (),
    secret: str = "",
) -> dict:
    """The JSON a worker reads: which file, which notebook and points, the limits (raised for a notebook
    whose longest cell needs more, ``Limits.for_notebook``), where to write."""
    return {
        "path": str(sub.path.resolve()),
        "student": sub.student,
        "rel": sub.rel,
        "notebook": entry.name,
        "points": entry.points,
        "limits": asdict(limits.for_notebook(entry.cell_seconds)),
        "seeds": list(seeds),
        "hidden_tests": str(hidden.resolve()) if hidden else None,
        "result": str(result),
        "secrets": list(secrets),
        "course_cells": sorted(entry.course_cells),  # an error in one of these is the course's (``cells.blame_course``)
        "case_key": secret,  # the hidden cases' secret (``hidden.keyed_exercise``); job files never enter a sandbox
    }


def _stale_job_folders(parent: Path) -> None:
    for folder in parent.glob(".course-lab-run-*"):
        owner = folder.name.rsplit("-", 1)[-1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(folder, ignore_errors=True)


NO_MATCH = "matches no course notebook by file name, metadata or the functions it defines"


def _classify(sub: Submission, catalog: dict[str, CourseNotebook]) -> SubmissionResult | str:
    """The course notebook ``sub`` is to be graded as, or its finished row (unreadable, a link, no match).

    Any fault while reading or identifying this one file (metadata of a shape nobody expected) is this
    file's ``unreadable`` row, never the run's end."""
    try:
        nb, problem = (None, sub.problem) if sub.status else read_submission(sub.path)
        name = identify(sub, nb, catalog) if sub.status != Status.LINK else None
    except Exception as exc:
        why = f"could not be read or identified ({type(exc).__name__}: {str(exc)[:150]})"
        row = ExerciseResult("", 0, 0, Status.UNREADABLE, why)
        return SubmissionResult(sub.student, sub.rel, "", Status.UNREADABLE, [row])
    status = sub.status or Status.UNREADABLE
    if nb is None:
        rows = zero_rows(catalog[name].points, status, problem) if name else [ExerciseResult("", 0, 0, status, problem)]
        return SubmissionResult(sub.student, sub.rel, name or "", status, rows)
    if name is None:
        row = ExerciseResult("", 0, 0, Status.UNKNOWN_NOTEBOOK, NO_MATCH)
        return SubmissionResult(sub.student, sub.rel, "", Status.UNKNOWN_NOTEBOOK, [row])
    return name


def grade_folder(
    folder: Path,
    source: Path,
    limits: Limits,
    seeds: list[int] = (1, 2),
    hidden_tests: Path | None = None,
    jobs: int = 1,
    progress: bool = True,
    journal: Path | None = None,
) -> FolderRun:
    """Grade every submission in ``folder``; always one ``SubmissionResult`` per submitted file."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    seeds = check_seeds(seeds)  # a bad seed stops here, not as a grader error in every row
    catalog = course_catalog(source)
    load_hidden_tests(hidden_tests, set(all_exercises()))  # fail before grading if a test file is broken
    run = FolderRun([])
    submissions = find_submissions(folder, run.warnings)
    results: list[SubmissionResult | None] = [None] * len(submissions)
    pending = []
    for index, sub in enumerate(submissions):
        found = _classify(sub, catalog)
        if isinstance(found, SubmissionResult):
            results[index] = found
        else:
            pending.append((index, sub, catalog[found]))
    scratch_parent = journal.parent if journal is not None else Path(tempfile.gettempdir())
    scratch_parent.mkdir(parents=True, exist_ok=True)
    _stale_job_folders(scratch_parent)
    if limits.sandbox:
        sweep_stale_cgroups()
    job_dir = scratch_parent / f".course-lab-run-{os.getpid()}"
    job_dir.mkdir(mode=0o700)
    secrets = [str(Path(p).resolve()) for p in (folder, source, hidden_tests, scratch_parent, job_dir) if p]
    hidden_digest = digest_files(sorted(Path(hidden_tests).glob("*.py"))) if hidden_tests else ""
    done = read_journal(journal)
    todo = []
    # Two different things, kept under two names: the instructor's secret that keys every job's hidden
    # cases (the same for the whole batch), and each job's journal key (a hash of what its result
    # depends on, which a student can compute for their own file: never a secret).
    secret = case_key() if pending and seeds else ""  # no hidden cases (a student's own check): no key needed
    for index, sub, entry in pending:
        job = make_job(sub, entry, limits, seeds, hidden_tests, job_dir / f"result{index}.json", secrets, secret)
        entry_key = job_key(job, hidden_digest)
        if entry_key in done:
            results[index] = SubmissionResult.from_json(dict(done[entry_key]))
            run.resumed += 1
        else:
            todo.append((index, job, entry_key))
    bar = tqdm(total=len(submissions), desc="grading", unit="submission", disable=not progress)
    bar.update(len(submissions) - len(todo))
    pool = WorkerPool(min(jobs, len(todo)) or 1, str(job_dir))
    book = Journal(journal)
    try:
        _grade_pending(todo, results, pool.grade, bar, jobs, job_dir, book)
    finally:
        book.close()
        pool.close()
        shutil.rmtree(job_dir, ignore_errors=True)
        bar.close()
    if not limits.sandbox:
        run.warnings.append("NOT ISOLATED: --no-sandbox was given, student code ran as the grader's own user")
    elif not cgroups_writable():
        run.warnings.append(
            "memory limit per process only (no writable cgroup): a submission's processes together "
            f"may use up to {limits.processes} x {limits.memory_mb} MiB"
        )
    run.results = results
    return run


def _grade_pending(todo, results, grade, bar, jobs, job_dir, book) -> None:
    with ThreadPoolExecutor(jobs) as threads:
        futures = {
            threads.submit(grade, job, Path(job_dir) / f"job{index}.json"): (index, job, key)
            for index, job, key in todo
        }
        for future in as_completed(futures):
            index, job, key = futures[future]
            try:
                results[index] = future.result()
            except Exception as exc:  # never lose a row to a fault in the grader itself
                results[index] = SubmissionResult(
                    job["student"],
                    job["rel"],
                    job["notebook"],
                    Status.GRADER_ERROR,
                    zero_rows(job["points"], Status.GRADER_ERROR, f"{type(exc).__name__}: {exc}"[:200]),
                )
            if results[index].status != Status.GRADER_ERROR:  # a fault of the grader is retried by a rerun
                book.add(key, results[index])
            bar.update(1)
