"""The grader's verdicts travel as data: nothing after the judge reads a row's text to learn what happened.

A row's status and matched mistake, and each cell's problem, are fields (``results.py``); the text is
written once, where it is shown. Each test plants text that looks like another kind of verdict (a cell
note, the stub's ``NotImplementedError``, a property's hint) and shows that the feedback file, the class
report and ``course-lab progress`` still tell what happened. Grading runs in this process
(``InProcessProxy``), without kernels."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from course_utils.checks import get_exercise
from course_utils.checks.core import Mistake
from course_utils.lab.grading.class_report import class_counts
from course_utils.lab.grading.feedback import problems
from course_utils.lab.grading.grade import grade_exercise
from course_utils.lab.grading.gradebook import feedback_text
from course_utils.lab.grading.plan import GradingPlan, plan_for_job
from course_utils.lab.grading.standing import _cell_lines, _verdict
from course_utils.lab.results import CellProblem, SubmissionResult
from test_grade_feedback import _student
from test_grader_path import InProcessProxy

SOFTMAX = get_exercise("stable_softmax")
WELCOME = "00_welcome.ipynb"
# a hint that reads like a cell note (``cell N: kind: detail``) and names the stub's exception
NOTE_LIKE = "cell 2: error: NotImplementedError is not it: the logits were doubled before the softmax"
DOUBLED = "def stable_softmax(x):\n    return torch.softmax(2 * x, dim=-1)\n"
UNNORMALISED = "def stable_softmax(x):\n    return x.exp()\n"
ZEROS = "def stable_softmax(x):\n    return torch.zeros_like(x)\n"


def _doubled(x):
    return torch.softmax(2 * x, dim=-1)


def _grade(exercise, source: str, seeds=(1, 2)):
    """The row for a notebook whose cell holds ``source`` (``stable_softmax``), graded against ``exercise``."""
    proxy = InProcessProxy(exercise, _student(source))
    return grade_exercise(exercise.name, 2, lambda *a: proxy, GradingPlan({exercise.name: exercise}, seeds))


def _submission(row, cells=()):
    return SubmissionResult("ann", f"ann/{WELCOME}", WELCOME, "ok", [row], list(cells))


def test_a_hint_shaped_like_a_cell_note_is_still_a_wrong_answer_with_its_mistake(tmp_path):
    planted = dataclasses.replace(SOFTMAX, mistakes=(*SOFTMAX.mistakes, Mistake("doubled logits", _doubled, NOTE_LIKE)))
    row = _grade(planted, DOUBLED)
    assert (row.status, row.points, row.mistake) == ("ok", 0, "doubled logits")
    assert row.feedback.startswith(NOTE_LIKE + " (case: ")  # a public case: told in full
    clean = _submission(row)
    text = feedback_text("ann", [clean])
    assert problems(clean) == [] and "- problems: none" in text and "Running the notebook" not in text
    assert NOTE_LIKE.replace("`", "") in text  # the hint reaches the student as it is
    assert _verdict(row).startswith("❌ cell 2: error: NotImplementedError is not it")  # a wrong answer, not "⏳"
    assert _cell_lines("00_welcome", clean.cells, tmp_path / "absent.ipynb") == []  # no cell line made up
    counts = class_counts([clean], {WELCOME: 2.0}, {"stable_softmax": planted})[0]
    assert (counts.mistakes["doubled logits"], counts.not_attempted, counts.other) == (1, 0, 0)
    # beside a real cell problem, the cell is listed and counted once, the hint still is no problem
    raised = _submission(row, [CellProblem(4, "error", "NameError: name 'x' is not defined")])
    assert problems(raised) == ["cell error"]
    assert "cell 5: error: NameError" in feedback_text("ann", [raised])
    assert _cell_lines("00_welcome", raised.cells, tmp_path / "absent.ipynb") == [
        f"{'00_welcome':<32} cell 5 raises NameError: name 'x' is not defined (Run All stops here)"]


def test_a_property_hint_that_a_mistake_shares_names_no_mistake():
    """The property fails; the mistake with the same words was not made, and the class report says so."""
    same_words = SOFTMAX.properties[0].hint
    planted = dataclasses.replace(SOFTMAX, mistakes=(Mistake("all zeros", torch.zeros_like, same_words),))
    unnormalised = _grade(planted, UNNORMALISED)
    assert unnormalised.feedback.startswith(same_words) and unnormalised.mistake == ""
    counts = class_counts([_submission(unnormalised)], {WELCOME: 2.0}, {"stable_softmax": planted})[0]
    assert (counts.mistakes["all zeros"], counts.other) == (0, 1)
    zeros = _grade(planted, ZEROS)
    assert zeros.feedback.startswith(same_words) and zeros.mistake == "all zeros"


def test_cell_problems_survive_the_journal_and_a_wrong_kind_is_refused():
    result = _submission(_grade(SOFTMAX, UNNORMALISED), [CellProblem(0, "course_error", "cell 3: timeout: not one")])
    again = SubmissionResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again == result and problems(again) == ["course cell error"]  # the kind, not the detail's words
    with pytest.raises(ValueError, match="CellProblem kind must be one of"):
        CellProblem(0, "cell error", "a kind spelled as the feedback file lists it")


def test_the_plan_is_built_once_from_the_job_and_refuses_a_bad_seed():
    plan = plan_for_job({"seeds": [1, 2], "case_key": "secret", "hidden_tests": None})
    plain = plan_for_job({"seeds": [1, 2], "hidden_tests": None})
    assert plan.seeds == (1, 2) and set(plan.registry) == set(plain.registry) and plan.files == plain.files
    keyed, unkeyed = plan.registry["stable_softmax"], plain.registry["stable_softmax"]
    assert all(torch.equal(a.args[0], b.args[0]) for a, b in zip(keyed.cases(0), unkeyed.cases(0)))  # public alike
    assert not all(torch.equal(a.args[0], b.args[0]) for a, b in zip(keyed.cases(1), unkeyed.cases(1)))
    with pytest.raises(TypeError):
        plan.registry["stable_softmax"] = SOFTMAX  # one plan, read-only all the way down
    with pytest.raises(ValueError, match="seeds must be whole numbers >= 1"):
        GradingPlan({}, seeds=(0, 1))
    with pytest.raises(TypeError, match="hidden must be a HiddenTests"):
        GradingPlan({}, hidden={"stable_softmax": []})
