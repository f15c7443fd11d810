"""Grade a whole folder of submissions, ``jobs`` at a time, each in its own worker process.

Unreadable files, links and notebooks that match no course notebook get their row here without a
kernel. Every other submission goes to one of ``jobs`` long-lived ``course_utils.lab.worker --serve``
processes; a worker that crashes, is killed, or runs past the submission's overall time budget
yields a ``grader_error`` row (it and its kernel are killed and a fresh worker takes the next
submission), and the folder carries on. A tqdm bar shows progress.

Each finished result is appended at once to a journal (``journal``, one JSON line per submission,
flushed to disk), keyed by everything the result depends on (the file's bytes, the course
notebook, points, limits, seeds and the instructor tests). If the grader is killed, running the
same command again takes every result from the journal that still matches and grades only the
rest; the caller removes the journal once the gradebook is written. The job folder lives beside the
journal and is removed at the end (a killed run's is removed by the next).

Leaves out: the per-submission grading (``grade.py``) and the files written (``gradebook.py``).
"""

from __future__ import annotations

import hashlib
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil
from tqdm.auto import tqdm

from course_utils.checks import all_exercises
from course_utils.lab.hidden import load_hidden_tests
from course_utils.lab.limits import GRACE_S, Limits
from course_utils.lab.results import ExerciseResult, SubmissionResult, zero_rows
from course_utils.lab.sandbox import cgroups_writable, sweep_stale_cgroups
from course_utils.lab.submissions import (
    CourseNotebook,
    Submission,
    course_catalog,
    find_submissions,
    identify,
    read_submission,
)

KERNEL_START_S = 180.0  # the most a kernel may take to start, on top of a submission's total time


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
    }


def _budget(limits: Limits) -> float:
    return KERNEL_START_S + limits.total() + 4 * GRACE_S


def _digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def job_key(job: dict, hidden_digest: str) -> str:
    """What a result depends on, hashed: the file's bytes, the notebook, points, limits, seeds, tests."""
    parts = {k: job[k] for k in ("rel", "student", "notebook", "points", "limits", "seeds")}
    parts["file"] = _digest([Path(job["path"])])
    parts["hidden"] = hidden_digest
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def read_journal(journal: Path | None) -> dict[str, dict]:
    """``{key: result JSON}`` from a journal; a line cut short by a crash is ignored."""
    found = {}
    if journal is None or not journal.exists():
        return found
    for line in journal.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
            SubmissionResult.from_json(dict(entry["result"]))
            found[entry["key"]] = entry["result"]
        except (ValueError, KeyError, TypeError):
            continue
    return found


class _Journal:
    def __init__(self, path: Path | None):
        self.handle = open(path, "a", encoding="utf-8") if path is not None else None

    def add(self, key: str, result: SubmissionResult) -> None:
        if self.handle is not None:
            self.handle.write(json.dumps({"key": key, "result": result.to_json()}) + "\n")
            self.handle.flush()
            os.fsync(self.handle.fileno())

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


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
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "course_utils.lab.worker", "--serve"],
                env=dict(os.environ, TMPDIR=self.scratch),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
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
            failed.exercises = zero_rows(job["points"], "grader_error", why)
            return failed
        try:
            return SubmissionResult.from_json(json.loads(Path(job["result"]).read_text()))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            failed.exercises = zero_rows(job["points"], "grader_error", f"unreadable result ({type(exc).__name__})")
            return failed


def _stale_job_folders(parent: Path) -> None:
    for folder in parent.glob(".course-lab-run-*"):
        owner = folder.name.rsplit("-", 1)[-1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(folder, ignore_errors=True)


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
    catalog = course_catalog(source)
    load_hidden_tests(hidden_tests, set(all_exercises()))  # fail before grading if a test file is broken
    run = FolderRun([])
    submissions = find_submissions(folder, run.warnings)
    results: list[SubmissionResult | None] = [None] * len(submissions)
    pending = []
    for index, sub in enumerate(submissions):
        nb, problem = (None, sub.problem) if sub.status else read_submission(sub.path)
        name = identify(sub, nb, catalog) if sub.status != "link" else None
        status = sub.status or "unreadable"
        if nb is None:
            rows = (
                zero_rows(catalog[name].points, status, problem)
                if name
                else [ExerciseResult("", 0, 0, status, problem)]
            )
            results[index] = SubmissionResult(sub.student, sub.rel, name or "", status, rows)
        elif name is None:
            results[index] = SubmissionResult(
                sub.student,
                sub.rel,
                "",
                "unknown_notebook",
                [
                    ExerciseResult(
                        "",
                        0,
                        0,
                        "unknown_notebook",
                        "matches no course notebook by file name, metadata or the functions it defines",
                    )
                ],
            )
        else:
            pending.append((index, sub, catalog[name]))
    scratch_parent = journal.parent if journal is not None else Path(tempfile.gettempdir())
    scratch_parent.mkdir(parents=True, exist_ok=True)
    _stale_job_folders(scratch_parent)
    if limits.sandbox:
        sweep_stale_cgroups()
    job_dir = scratch_parent / f".course-lab-run-{os.getpid()}"
    job_dir.mkdir(mode=0o700)
    secrets = [str(Path(p).resolve()) for p in (folder, source, hidden_tests, scratch_parent, job_dir) if p]
    hidden_digest = _digest(sorted(Path(hidden_tests).glob("*.py"))) if hidden_tests else ""
    done = read_journal(journal)
    todo = []
    for index, sub, entry in pending:
        job = make_job(sub, entry, limits, seeds, hidden_tests, job_dir / f"result{index}.json", secrets)
        key = job_key(job, hidden_digest)
        if key in done:
            results[index] = SubmissionResult.from_json(dict(done[key]))
            run.resumed += 1
        else:
            todo.append((index, job, key))
    bar = tqdm(total=len(submissions), desc="grading", unit="submission", disable=not progress)
    bar.update(len(submissions) - len(todo))
    workers: queue.Queue = queue.Queue()
    for _ in range(min(jobs, len(todo)) or 1):
        workers.put(_Worker(str(job_dir)))

    def grade(job: dict, job_file: Path) -> SubmissionResult:
        worker = workers.get()
        try:
            return worker.grade(job, job_file, _budget(Limits(**job["limits"])))
        finally:
            workers.put(worker)

    book = _Journal(journal)
    try:
        _grade_pending(todo, results, grade, bar, jobs, job_dir, book)
    finally:
        book.close()
        while not workers.empty():
            workers.get().stop()
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
    with ThreadPoolExecutor(jobs) as pool:
        futures = {
            pool.submit(grade, job, Path(job_dir) / f"job{index}.json"): (index, job, key) for index, job, key in todo
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
                    "grader_error",
                    zero_rows(job["points"], "grader_error", f"{type(exc).__name__}: {exc}"[:200]),
                )
            if results[index].status != "grader_error":  # a fault of the grader is retried by a rerun
                book.add(key, results[index])
            bar.update(1)
