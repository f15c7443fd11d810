"""The grader's side of its worker processes: start one, hand it a job, wait within a budget, kill it.

``WorkerPool(size, scratch)`` keeps ``size`` long-lived ``course_utils.lab.grading.worker --serve``
processes (``WorkerProcess``); ``pool.grade(job, job_file)`` takes a free one, writes the job file,
and waits for its ``DONE`` at most the job's budget (``limits.job_budget``). A worker that
crashes, is killed, or runs past the budget yields a ``grader_error`` result (it and its kernel are
killed, and a fresh worker is started for the next job).

Leaves out: choosing the jobs (``folder.py``) and the worker's own side (``worker.py``).
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import time
from pathlib import Path

import psutil

from course_utils.lab.limits import Limits, job_budget
from course_utils.lab.results import SubmissionResult, zero_rows
from course_utils.lab.status import Status


def kill_tree(pid: int) -> None:
    """Kill process ``pid`` and every process below it (whatever is already gone is skipped)."""
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


class WorkerProcess:
    """One ``course_utils.lab.grading.worker --serve`` process, restarted after it fails or overruns."""

    def __init__(self, scratch: str):
        self.proc: subprocess.Popen | None = None
        self.scratch = scratch  # TMPDIR of the worker and its kernels: removed with the job folder

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "course_utils.lab.grading.worker", "--serve"],
                env=dict(os.environ, TMPDIR=self.scratch),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        return self.proc

    def stop(self) -> None:
        if self.proc is not None:
            kill_tree(self.proc.pid)
            self.proc.wait()
            self.proc = None

    def grade(self, job: dict, job_file: Path, budget: float) -> SubmissionResult:
        job_file.write_text(json.dumps(job))
        failed = SubmissionResult(job["student"], job["rel"], job["notebook"], Status.GRADER_ERROR)
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
            failed.exercises = zero_rows(job["points"], Status.GRADER_ERROR, why)
            return failed
        try:
            return SubmissionResult.from_json(json.loads(Path(job["result"]).read_text()))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            why = f"unreadable result ({type(exc).__name__})"
            failed.exercises = zero_rows(job["points"], Status.GRADER_ERROR, why)
            return failed


class WorkerPool:
    """``size`` worker processes shared by the threads that grade: ``pool.grade(job, job_file)``, then ``close()``."""

    def __init__(self, size: int, scratch: str):
        self.workers: queue.Queue = queue.Queue()
        for _ in range(size):
            self.workers.put(WorkerProcess(scratch))

    def grade(self, job: dict, job_file: Path) -> SubmissionResult:
        worker = self.workers.get()
        try:
            return worker.grade(job, job_file, job_budget(Limits(**job["limits"])))
        finally:
            self.workers.put(worker)

    def close(self) -> None:
        while not self.workers.empty():
            self.workers.get().stop()
