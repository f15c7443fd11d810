"""Grade a folder without kernels: a stand-in for the worker pool that records the jobs
``folder.grade_folder`` hands out (``recording(monkeypatch)``), and ``student(source)``: the function a
notebook cell holding ``source`` defines, for ``test_grader_path.InProcessProxy``.
"""

from __future__ import annotations

import sys

from course_utils.lab.results import SubmissionResult, zero_rows
from course_utils.lab.status import Status


class RecordingPool:
    """Stands for ``pool.WorkerPool`` in ``folder.grade_folder``: records each job, grades nothing."""

    jobs: list[dict] = []

    def __init__(self, size: int, scratch: str):
        pass

    def grade(self, job: dict, job_file) -> SubmissionResult:
        RecordingPool.jobs.append(job)
        return SubmissionResult(job["student"], job["rel"], job["notebook"], Status.OK,
                                zero_rows(job["points"], Status.OK, "recorded, not graded"))

    def close(self) -> None:
        pass


def recording(monkeypatch) -> type[RecordingPool]:
    """Put ``RecordingPool`` (emptied) in the folder grader's place of the worker pool."""
    folder = sys.modules["course_utils.lab.grading.folder"]
    RecordingPool.jobs = []
    monkeypatch.setattr(folder, "WorkerPool", RecordingPool)
    return RecordingPool


def student(source: str, name: str, **names):
    """The object named ``name`` that a notebook cell holding ``source`` defines (module ``__main__``, a
    cell's file name), with ``names`` (a table, ``torch``) already in the cell's namespace."""
    namespace = {"__name__": "__main__", **names}
    exec(compile(source, "/tmp/ipykernel_1/7.py", "exec"), namespace)
    return namespace[name]
