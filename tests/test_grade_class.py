"""Grading a class with a grader killed half-way (issue #41.6), through benchmarks/bench_grade_class.py's own
functions: a class of 12 copies of the solution 00_welcome, ``course-lab grade --jobs 2`` killed (SIGKILL) once
half of them are in its journal, then run again. The rerun must take back every result the killed run journaled
(and grade only the rest), and the gradebook must hold each of the 12 submissions exactly once with the solution's
full score. Then, without a kernel, the gradebook check itself: a lost, a doubled and a wrongly scored row are
each reported.
"""

from __future__ import annotations

import csv

import pytest

from benchmarks.bench_grade_class import build_class, full_points, grade_class, gradebook_problems
from course_utils.lab.grading.sandbox import isolation_problem

COUNT = 12
ISOLATION_PROBLEM = isolation_problem()


@pytest.mark.slow
@pytest.mark.timeout(600)  # 31 s on the 2-core machine at load 1.6-1.9, 89 s at load 6-7
@pytest.mark.skipif(ISOLATION_PROBLEM is not None, reason=f"no sandbox here: {ISOLATION_PROBLEM}")
def test_a_grader_killed_halfway_through_a_class_resumes_without_losing_or_doubling_a_submission(tmp_path):
    found = grade_class(tmp_path, COUNT, jobs=2, kill_at=0.5)
    killed, rerun = found.runs
    assert killed.journal_entries is not None, "the grader finished before it was killed"
    assert COUNT // 2 <= killed.journal_entries < COUNT, killed.journal_entries  # killed about half-way
    assert found.resumed == killed.journal_entries, rerun.stdout  # every journaled result taken back
    assert found.problems == []  # each of the 12 exactly once, full points, one TOTAL each
    assert f"graded {COUNT} submission(s) from {COUNT} student(s)" in rerun.stdout
    assert f": {COUNT} full marks, 0 zero, 0 with problems" in rerun.stdout


def _write_book(path, rows) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "exercise", "points", "status"])
        writer.writerows(rows)


def test_the_gradebook_check_reports_a_lost_a_doubled_and_a_wrongly_scored_submission(tmp_path):
    names = build_class(tmp_path / "subs", 3)
    assert names == ["student000", "student001", "student002"]
    assert sorted(p.name for p in (tmp_path / "subs").iterdir()) == [f"{n}.ipynb" for n in names]
    points = full_points()
    assert points == {"stable_softmax": 2.0}
    good = [[n, e, str(p), "ok"] for n in names for e, p in [*points.items(), ("TOTAL", 2.0)]]
    book = tmp_path / "grades.csv"
    _write_book(book, good)
    assert gradebook_problems(book, names, points) == []
    _write_book(book, good[2:] + [good[3]] + [["student002", "stable_softmax", "0", "ok"]])
    assert gradebook_problems(book, names, points) == [
        "student000 stable_softmax: 0 row(s)",
        "student000 TOTAL: 0 row(s)",
        "student001 TOTAL: 2 row(s)",
        "student002 stable_softmax: 2 row(s)",
    ]
    _write_book(book, [good[0], ["student000", "TOTAL", "2", "grader_error"], *good[2:], ["ghost", "TOTAL", "2", "ok"]])
    assert gradebook_problems(book, names, points) == [
        "student000 TOTAL: 2 points, grader_error",
        "unexpected row(s) ('ghost', 'TOTAL'): 1",
    ]
    assert gradebook_problems(tmp_path / "none.csv", names, points) == [f"no gradebook at {tmp_path / 'none.csv'}"]
