"""One grading job in its own process: ``python -m course_utils.lab.worker JOB.json``.

The folder grader starts one worker per submission, so whatever a submission does to the process
that started its kernel (kills it, floods it) costs only that submission's row, never the
gradebook. The job file names the submission, its course notebook, points, limits and where to
write the result (JSON, written atomically).

Leaves out: choosing jobs and writing the gradebook (``folder.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from course_utils.checks import all_exercises
from course_utils.lab.grade import ExerciseResult, SubmissionResult, exercise_files, grade_notebook
from course_utils.lab.hidden import load_hidden_tests
from course_utils.lab.kernel import Limits
from course_utils.lab.submissions import read_submission


def run_job(job: dict) -> SubmissionResult:
    """Grade the submission a job describes (see ``folder.make_job``)."""
    start = time.monotonic()
    result = SubmissionResult(job["student"], job["rel"], job["notebook"], "ok")
    nb, problem = read_submission(Path(job["path"]))
    points = job["points"]
    if nb is None:
        result.status = "unreadable"
        result.exercises = [ExerciseResult(name, 0, p, "unreadable", problem) for name, p in points.items()]
        return result
    registry = all_exercises()
    hidden = load_hidden_tests(Path(job["hidden_tests"]) if job.get("hidden_tests") else None, set(registry))
    status, rows, notes = asyncio.run(grade_notebook(nb, points, registry, Limits(**job["limits"]),
                                                     job["seeds"], hidden, exercise_files()))
    result.status, result.exercises, result.notes = status, rows, notes
    result.seconds = round(time.monotonic() - start, 3)
    return result


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    result = run_job(job)
    target = Path(job["result"])
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(result.to_json()))
    os.replace(tmp, target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
