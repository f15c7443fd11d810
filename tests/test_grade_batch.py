"""The folder grader's batch, without kernels (the worker pool is a recorder, ``grading_local``):
every job keyed by the instructor's secret (issue #37.1, #43.1), a file of any shape becomes its own
``unreadable`` row (#43.3), and identifying a file costs bounded time (#43.2)."""

from __future__ import annotations

import shutil
import threading
from dataclasses import asdict
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from course_utils.checks import all_exercises
from course_utils.lab.grading import folder
from course_utils.lab.grading.grade import grade_exercise
from course_utils.lab.grading.hidden import CASE_KEY_ENV, keyed_exercise
from course_utils.lab.grading.plan import GradingPlan
from course_utils.lab.grading.identify import defined_names, identify
from course_utils.lab.grading.journal import job_key
from course_utils.lab.grading.submissions import Submission, course_catalog
from course_utils.lab.limits import Limits
from grading_fixtures import NAME, WELCOME, solution
from grading_local import recording, student
from test_grader_path import InProcessProxy

SECRET = "the-instructors-secret-" + "5" * 40


def _source(root: Path) -> Path:
    source = root / "source"
    source.mkdir()
    shutil.copy(WELCOME, source / NAME)
    return source


def _grade(root: Path, monkeypatch, seeds=(1, 2)):
    monkeypatch.setenv(CASE_KEY_ENV, SECRET)
    pool = recording(monkeypatch)
    run = folder.grade_folder(root / "subs", _source(root), Limits(sandbox=False), list(seeds), progress=False)
    return run, pool.jobs


def _hand_in(root: Path, rel: str, nb) -> Path:
    path = root / "subs" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path)) if not isinstance(nb, str) else path.write_text(nb)
    return path


def test_every_job_in_a_batch_gets_the_same_secret_and_none_comes_from_another_job(tmp_path, monkeypatch):
    for student in ("ann", "bob", "cy", "dee"):
        _hand_in(tmp_path, f"{student}/{NAME}", solution())
    run, jobs = _grade(tmp_path, monkeypatch)
    assert len(jobs) == 4 and len(run.results) == 4
    assert [job["case_key"] for job in jobs] == [SECRET] * 4  # was: the first only, then the previous job's hash
    for job in jobs:
        for other in jobs:
            derived = {job_key(other, ""), job_key({k: v for k, v in other.items() if k != "case_key"}, "")}
            assert job["case_key"] not in derived


def test_a_decoy_handed_in_just_before_the_real_notebook_does_not_give_away_its_key(tmp_path, monkeypatch):
    """Issue #43.1's exploit: the key of the real notebook was the decoy's journal hash, which the
    student computes from what they know (their file, its path, the course's points and default
    limits), then tabulates the hidden cases under it and answers from the table."""
    decoy = _hand_in(tmp_path, "mallory/a_decoy.ipynb", solution())  # identified by its metadata
    _hand_in(tmp_path, "mallory/b_real.ipynb", solution())
    points = {"stable_softmax": 2.0}
    known = {"path": str(decoy), "rel": "mallory/a_decoy.ipynb", "student": "mallory", "notebook": NAME,
             "points": points, "limits": asdict(Limits(sandbox=False)), "seeds": [1, 2]}
    predicted = job_key(known, "")
    exercise = all_exercises()["stable_softmax"]
    table = {}
    for seed in (0, 1, 2):
        for case in keyed_exercise(exercise, predicted).cases(seed):
            x = case.args[0]
            table[(tuple(x.shape), x.numpy().tobytes())] = exercise.reference(x)

    answer = student("def stable_softmax(x):  # no softmax at all: the table, else the logits back\n"
                     "    return table.get((tuple(x.shape), x.numpy().tobytes()), x)\n", "stable_softmax", table=table)

    def score(key: str) -> float:
        keyed = keyed_exercise(exercise, key)
        proxy = InProcessProxy(keyed, answer)
        plan = GradingPlan({"stable_softmax": keyed}, (1, 2))
        return grade_exercise("stable_softmax", 2.0, lambda *a: proxy, plan).points

    assert score(predicted) == 2.0  # the exploit works wherever the key is the decoy's hash
    _, jobs = _grade(tmp_path, monkeypatch)
    real = next(job for job in jobs if job["rel"] == "mallory/b_real.ipynb")
    assert real["case_key"] != predicted
    assert score(real["case_key"]) == 0.0


def test_the_journal_key_changes_with_the_secret(tmp_path):
    path = _hand_in(tmp_path, f"ann/{NAME}", solution())
    job = {"path": str(path), "rel": f"ann/{NAME}", "student": "ann", "notebook": NAME, "points": {"x": 1.0},
           "limits": {}, "seeds": [1], "case_key": "one"}
    assert job_key(job, "") != job_key({**job, "case_key": "two"}, "")  # results graded under another key are not reused


ODD_METADATA = {
    "course is a string": {"course": "00_welcome"},
    "course is null": {"course": None},
    "course is a list": {"course": ["stable_softmax"]},
    "exercises is a number": {"course": {"exercises": 3}},
    "exercises is a list": {"course": {"exercises": ["stable_softmax"]}},
}


@pytest.mark.parametrize("shape", sorted(ODD_METADATA))
def test_metadata_of_any_shape_is_read_without_raising(shape):
    nb = new_notebook(cells=[new_code_cell("x = 1")], metadata=ODD_METADATA[shape])
    catalog = course_catalog(WELCOME.parent)
    sub = Submission("eve", Path("eve.ipynb"), "eve.ipynb")
    assert identify(sub, nb, catalog) is None


def test_a_file_that_breaks_identification_is_its_own_unreadable_row(tmp_path, monkeypatch):
    for shape, metadata in ODD_METADATA.items():
        _hand_in(tmp_path, shape.replace(" ", "_") + ".ipynb", new_notebook(cells=[new_code_cell("x = 1")], metadata=metadata))
    _hand_in(tmp_path, f"ann/{NAME}", solution())
    _hand_in(tmp_path, "zed.ipynb", solution())  # identified by metadata, after the odd ones

    def breaks(sub, nb, catalog):  # a fault nobody foresaw, in one file
        if sub.student == "boom":
            raise KeyError("something unexpected")
        return identify(sub, nb, catalog)

    _hand_in(tmp_path, "boom.ipynb", solution())
    monkeypatch.setattr(folder, "identify", breaks)
    run, jobs = _grade(tmp_path, monkeypatch)
    rows = {r.submission: r for r in run.results}
    assert len(rows) == len(ODD_METADATA) + 3
    assert rows["boom.ipynb"].status == "unreadable" and "KeyError" in rows["boom.ipynb"].exercises[0].feedback
    for shape in ODD_METADATA:
        assert rows[shape.replace(" ", "_") + ".ipynb"].status == "unknown_notebook"
    assert sorted(job["rel"] for job in jobs) == [f"ann/{NAME}", "zed.ipynb"]


def test_a_megabyte_of_blank_lines_is_identified_in_bounded_time(tmp_path, monkeypatch):
    """Issue #43.2: ``^\\s*def`` with MULTILINE was quadratic on blank lines (43 KB: ~130 s; 1 MB: weeks)."""
    blank = new_notebook(cells=[new_code_cell("\n" * (1 << 20)), new_code_cell(" \n" * (1 << 19) + "def f(): pass")])
    _hand_in(tmp_path, "blank.ipynb", blank)
    _hand_in(tmp_path, "zed.ipynb", solution())
    finished = []
    worker = threading.Thread(target=lambda: finished.append(_grade(tmp_path, monkeypatch)), daemon=True)
    worker.start()
    worker.join(120)  # a safety net, not a timing: the linear scan takes well under a second
    assert finished, "identifying a 1.5 MB notebook of blank lines did not finish"
    run, jobs = finished[0]
    assert {r.submission: r.status for r in run.results}["blank.ipynb"] == "unknown_notebook"
    assert [job["rel"] for job in jobs] == ["zed.ipynb"]
    assert "f" in defined_names(blank)  # the def after the blank lines is still found


def test_names_are_found_at_any_depth_in_cells_ast_can_read_and_in_those_it_cannot():
    nb = new_notebook(cells=[
        new_code_cell("class Head:\n    def forward(self):\n        pass\n\nasync def fetch():\n    pass"),
        new_code_cell("%matplotlib inline\ndef stable_softmax(x):\n    return x\n  class Inner: pass"),
        new_code_cell("text = '''\ndef in_a_string(): pass\n'''"),  # ast knows a string from a def
    ])
    assert defined_names(nb) == {"Head", "forward", "fetch", "stable_softmax", "Inner"}
    assert defined_names(nb, max_chars=10) == {"Head"}  # only "class Head" was looked at: the budget ends the search
