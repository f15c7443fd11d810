"""Grading jobs in a separate process: ``python -m course_utils.lab.grading.worker JOB.json`` grades one;
``python -m course_utils.lab.grading.worker --serve`` reads job-file paths from stdin, one a line, and
answers ``DONE`` on stdout after writing each result (so torch is imported once per worker).

The folder grader keeps ``--jobs`` workers, so a fault while grading one submission (a crash, a
flood of output) costs only that submission's row, never the gradebook; the sandbox keeps the
kernel from seeing or signalling the worker at all. A worker dies with the grader, and its own
memory is capped (``limits.WORKER_MEMORY_MB``, a soft ``RLIMIT_DATA`` its kernels lift to theirs).
A job file names the submission, its course notebook, points, limits, what to judge by (made into one
``plan.GradingPlan``) and where to write the result (JSON, written atomically).

Leaves out: choosing jobs and writing the gradebook (``folder.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from course_utils.lab.grading.grade import grade_notebook
from course_utils.lab.grading.plan import plan_for_job
from course_utils.lab.grading.boot import cap_own_data, die_with_parent
from course_utils.lab.limits import WORKER_MEMORY_MB, Limits
from course_utils.lab.results import SubmissionResult, zero_rows
from course_utils.lab.grading.submissions import read_submission
from course_utils.lab.status import Status


def run_job(job: dict) -> SubmissionResult:
    """Grade the submission a job describes (see ``folder.make_job``)."""
    start = time.monotonic()
    result = SubmissionResult(job["student"], job["rel"], job["notebook"], Status.OK)
    nb, problem = read_submission(Path(job["path"]))
    points = job["points"]
    if nb is None:
        result.status = Status.UNREADABLE
        result.exercises = zero_rows(points, Status.UNREADABLE, problem)
        return result
    plan = plan_for_job(job)
    limits, secrets, course = Limits(**job["limits"]), job.get("secrets", []), frozenset(job.get("course_cells", []))
    status, rows, cells = asyncio.run(grade_notebook(nb, points, plan, limits, secrets, course))
    result.status, result.exercises, result.cells = status, rows, cells
    result.seconds = round(time.monotonic() - start, 3)
    return result


def run_job_file(job_file: str) -> None:
    """Run the job in ``job_file`` and write its result; a fault here becomes a ``grader_error`` result."""
    job = json.loads(Path(job_file).read_text())
    try:
        result = run_job(job)
    except Exception as exc:  # keep serving: this submission gets a grader_error row
        reason = f"the grader failed on this submission: {type(exc).__name__}: {exc}"[:300]
        result = SubmissionResult(
            job["student"],
            job["rel"],
            job["notebook"],
            Status.GRADER_ERROR,
            zero_rows(job["points"], Status.GRADER_ERROR, reason),
        )
    target = Path(job["result"])
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(result.to_json()))
    os.replace(tmp, target)


def main(argv: list[str]) -> int:
    die_with_parent()  # a killed grader leaves no worker (and so no kernel) behind
    cap_own_data(WORKER_MEMORY_MB)  # whatever an answer makes it allocate fails past this, in this process only
    if argv != ["--serve"]:
        run_job_file(argv[0])
        return 0
    reply = os.fdopen(os.dup(1), "w")  # the protocol channel; stray prints go to stderr from here on
    os.dup2(2, 1)
    for line in sys.stdin:
        if line.strip():
            run_job_file(line.strip())
            reply.write("DONE\n")
            reply.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
