"""The grader's feedback policy, gradebook totals, Canvas export and class report, without kernels.

``grade_exercise`` runs here against a student's function in this process (``InProcessProxy``, the
grader's own kernel-side code run in a namespace), so a hidden case's failure is checked as a
student and as the instructor would read it. The gradebook pieces run on hand-made results whose
totals are worked out by hand. The same pieces, through real sandboxed kernels on a folder of mixed
submissions, are checked in tests/test_grade.py."""

from __future__ import annotations

import csv

import pytest
import torch

from course_utils.checks import all_exercises, get_exercise
from course_utils.checks.outcome import HIDDEN_SEEDS, passed_line
from course_utils.lab.grading.class_report import class_counts, markdown, write_class_report
from course_utils.lab.cli import build_parser, hidden_seeds
from course_utils.lab.grading.feedback import describe_cell, problems
from course_utils.lab.grading.grade import grade_exercise
from course_utils.lab.grading.gradebook import feedback_text, summary_line, write_gradebook
from course_utils.lab.grading.hidden import HiddenTests
from course_utils.lab.grading.plan import GradingPlan
from course_utils.lab.results import CellProblem, ExerciseResult, SubmissionResult
from course_utils.lab.grading.canvas import canvas_export
from course_utils.lab.grading.totals import assignment_points, student_totals
from course_utils.lab.grading.submissions import CourseNotebook
from test_grader_path import InProcessProxy

SOFTMAX = get_exercise("stable_softmax")


SHIFTED = """def stable_softmax(x):
    s = x - x.amax(dim=-1, keepdim=True)
    return s.exp() / s.exp().sum(dim=-1, keepdim=True)
"""
PUBLIC = "def public(x):\n    return any(torch.equal(x, p) for p in PUBLIC_INPUTS)\n"
# right on the public cases (seed 0), raises printing its input on the others
PUBLIC_ONLY_RAISES = PUBLIC + SHIFTED.replace("    s =", "    if not public(x):\n"
                                              "        raise ValueError(f'SECRET-INPUT {x.tolist()}')\n    s =")
# the "no max shift" mistake, but only where the public cases cannot see it
PUBLIC_ONLY_UNSHIFTED = SHIFTED.replace("    s =", "    if x.max() != 10_000:\n"
                                        "        return x.exp() / x.exp().sum(dim=-1, keepdim=True)\n    s =")
# a wrong answer no bank mistake or property explains (rows still sum to 1), on hidden cases only
PUBLIC_ONLY_DOUBLED = PUBLIC + SHIFTED.replace("    s =", "    if not public(x):\n        x = 2 * x\n    s =")
NO_MAX_SHIFT = "def stable_softmax(x):\n    return x.exp() / x.exp().sum(dim=-1, keepdim=True)\n"


def _student(source: str):
    """The ``stable_softmax`` a notebook cell holding ``source`` defines (module ``__main__``, a cell's file)."""
    namespace = {"__name__": "__main__", "torch": torch, "PUBLIC_INPUTS": [c.args[0] for c in SOFTMAX.cases(0)]}
    exec(compile(source, "/tmp/ipykernel_1/7.py", "exec"), namespace)
    return namespace["stable_softmax"]


def _grade(source: str, hidden: HiddenTests | None = None) -> ExerciseResult:
    proxy = InProcessProxy(SOFTMAX, _student(source))
    plan = GradingPlan({"stable_softmax": SOFTMAX}, HIDDEN_SEEDS, hidden or HiddenTests())
    return grade_exercise("stable_softmax", 2, lambda *a: proxy, plan)


def test_a_failed_hidden_case_names_no_hidden_value_but_the_instructor_sees_it():
    n = 4 * len(HIDDEN_SEEDS)  # stable_softmax has 4 cases per seed
    raised = _grade(PUBLIC_ONLY_RAISES)
    hidden_input = SOFTMAX.cases(HIDDEN_SEEDS[0])[0].args[0]
    value = f"{hidden_input.tolist()[0]}"[:6]  # the first hidden logit, as the student's message prints it
    assert raised.feedback.startswith(f"hidden case 1 of {n} failed: `stable_softmax` raised ValueError")
    assert "SECRET" not in raised.feedback and value not in raised.feedback and "logits" not in raised.feedback
    assert "SECRET-INPUT" in raised.detail and value in raised.detail and "hidden case, seed 1" in raised.detail
    mistake = _grade(PUBLIC_ONLY_UNSHIFTED)  # the third case of seed 1 has logits near 10,001
    hint = SOFTMAX.mistakes[0].hint
    assert (mistake.feedback, mistake.mistake) == (f"hidden case 3 of {n} failed: {hint}", "no max shift")
    assert "near ±10,000" in mistake.detail
    wrong = _grade(PUBLIC_ONLY_DOUBLED)
    assert wrong.feedback == f"hidden case 1 of {n} failed" and wrong.mistake == ""
    assert wrong.detail != wrong.feedback and wrong.points == 0


def test_public_failures_are_told_in_full_and_instructor_tests_count_as_hidden():
    public = _grade(NO_MAX_SHIFT)
    assert public.detail == "" and "near ±10,000" in public.feedback and public.mistake == "no max shift"

    def test_stable_softmax__nine(student):
        if student(torch.zeros(2, 9)).shape != (3,):  # no assert: pytest would rewrite its message here
            raise AssertionError("SECRET expected shape (3,)")

    result = _grade(SHIFTED, HiddenTests(functions={"stable_softmax": [test_stable_softmax__nine]}))
    n = 4 * len(HIDDEN_SEEDS) + 1
    assert result.feedback == f"hidden case {n} of {n} failed"
    assert result.detail == "SECRET expected shape (3,) [test_stable_softmax__nine]"
    assert _grade(SHIFTED).feedback == f"passed all {4 * (1 + len(HIDDEN_SEEDS))} graded tests"


def test_release_hidden_shows_the_hidden_case_to_the_student(tmp_path):
    row = _grade(PUBLIC_ONLY_RAISES)
    result = SubmissionResult("ann", "ann/00_welcome.ipynb", "00_welcome.ipynb", "ok", [row])
    assert "SECRET" not in feedback_text("ann", [result])
    assert "SECRET" in feedback_text("ann", [result], release_hidden=True)
    out = tmp_path / "grades.csv"
    write_gradebook([result], out)
    assert "SECRET" not in (tmp_path / "grades_feedback" / "ann.md").read_text()
    assert "SECRET" in next(r for r in csv.DictReader(out.open()) if r["exercise"] == "stable_softmax")["feedback"]
    write_gradebook([result], out, release_hidden=True)
    assert "SECRET" in (tmp_path / "grades_feedback" / "ann.md").read_text()


def test_the_public_check_never_says_all_passed_while_hidden_cases_remain():
    verdict = SOFTMAX.check(_student(SHIFTED))
    assert str(verdict) == "✅ stable_softmax: passed the 4 public cases; 8 hidden cases remain to be graded"
    assert "all" not in str(verdict) and verdict.passed
    assert SOFTMAX.check(_student(SHIFTED), seed=1).message == "passed all 4 cases"  # a hidden seed run on its own
    assert passed_line(3) == "passed the 3 public cases; 6 hidden cases remain to be graded"
    default = next(a for a in build_parser()._subparsers._group_actions[0].choices["grade"]._actions
                   if a.dest == "hidden_seeds").default
    assert hidden_seeds(default) == list(HIDDEN_SEEDS)  # the grader runs what the check announces
    assert hidden_seeds("3, 4") == [3, 4]


def _row(exercise, points, best, status="ok", feedback="", mistake=""):
    return ExerciseResult(exercise, points, best, status, feedback, mistake=mistake)


# a class of four: ann handed in both notebooks (00 twice), ben only 00, cat's 01 timed out, dan a stray file
WELCOME, PAIR = "00_welcome.ipynb", "10_pair.ipynb"
CLASS = [
    SubmissionResult("ann", "ann/00_welcome.ipynb", WELCOME, "ok", [_row("stable_softmax", 0, 2, mistake="no max shift")]),
    SubmissionResult("ann", "ann.ipynb", WELCOME, "ok", [_row("stable_softmax", 2, 2)]),
    SubmissionResult("ann", "ann/10_pair.ipynb", PAIR, "ok", [_row("causal_mask", 1, 1), _row("stable_softmax", 0, 2,
                     "not_attempted", "not attempted")]),
    SubmissionResult("ben", "ben/00_welcome.ipynb", WELCOME, "ok", [_row("stable_softmax", 0, 2, mistake="no max shift")],
                     cells=[CellProblem(3, "error", "NameError: name 'x' is not defined")]),
    SubmissionResult("cat", "cat/10_pair.ipynb", PAIR, "timeout", [_row("causal_mask", 0, 1, mistake="inverted"),
                     _row("stable_softmax", 0, 2, "timeout", "ran past the 20 s time limit")]),
    SubmissionResult("dan", "dan.txt", "", "unreadable", [_row("", 0, 0, "unreadable", "invalid JSON")]),
]
ASSIGNMENT = {WELCOME: 2.0, PAIR: 3.0}


def test_totals_are_out_of_the_assignment_with_missing_notebooks_at_zero(tmp_path):
    totals = student_totals(CLASS, ASSIGNMENT)
    assert {s: (t.points, t.max_points, t.missing) for s, t in totals.items()} == {
        "ann": (3, 5, []), "ben": (0, 5, [PAIR]), "cat": (0, 5, [WELCOME]), "dan": (0, 5, [WELCOME, PAIR])}
    assert totals["ann"].describe(ASSIGNMENT) == (
        "3 of 5 points: 00_welcome.ipynb 2/2 (best of 2 submissions), 10_pair.ipynb 1/3")
    assert totals["dan"].describe({WELCOME: 2.0}).endswith("00_welcome.ipynb missing (0/2), not counted: dan.txt")
    out = tmp_path / "grades.csv"
    write_gradebook(CLASS, out, ASSIGNMENT)
    rows = list(csv.DictReader(out.open()))
    total = {r["student"]: (r["points"], r["max_points"], r["status"]) for r in rows if r["exercise"] == "TOTAL"}
    assert total == {"ann": ("3", "5", "ok"), "ben": ("0", "5", "missing"), "cat": ("0", "5", "missing,timeout"),
                     "dan": ("0", "5", "missing")}  # a stray file is listed, never the TOTAL's status
    missing = [(r["student"], r["notebook"], r["max_points"]) for r in rows if r["status"] == "missing" and r["exercise"] != "TOTAL"]
    assert missing == [("ben", PAIR, "3"), ("cat", WELCOME, "2"), ("dan", WELCOME, "2"), ("dan", PAIR, "3")]
    canvas = list(csv.reader((tmp_path / "grades_canvas.csv").open()))
    assert canvas == canvas_export(student_totals(CLASS, ASSIGNMENT), ASSIGNMENT).rows
    assert canvas[:3] == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "00_welcome", "10_pair"],
                          ["Points Possible", "", "", "", "", "2", "3"], ["ann", "", "", "ann", "", "2", "1"]]
    assert (tmp_path / "grades_feedback" / "ben.md").read_text().count("10_pair.ipynb missing (0/3)") == 1


def test_the_assignment_names_course_notebooks():
    catalog = {WELCOME: CourseNotebook(WELCOME, {"stable_softmax": 2.0}, frozenset()),
               PAIR: CourseNotebook(PAIR, {"causal_mask": 1.0, "stable_softmax": 2.0}, frozenset())}
    assert assignment_points(catalog, None) == ASSIGNMENT
    assert assignment_points(catalog, "10_pair, 00_welcome.ipynb") == {PAIR: 3.0, WELCOME: 2.0}
    with pytest.raises(ValueError, match="assignment names '99_nope'"):
        assignment_points(catalog, "99_nope")


def test_the_summary_counts_what_the_feedback_files_list():
    assert describe_cell(CellProblem(3, "error", "NameError: x")) == "cell 4: error: NameError: x"  # 1-based
    assert [problems(r) for r in CLASS] == [[], [], [], ["cell error"], ["timeout"], ["unreadable"]]
    line = summary_line(CLASS, 1.0)
    assert line.endswith("1 full marks, 4 zero, 3 with problems (1 cell error, 1 timeout, 1 unreadable)")
    texts = [feedback_text(r.student, [r]) for r in CLASS]
    assert sum("- problems: none" not in t for t in texts) == 3
    assert "- problems: cell error" in texts[3]


def test_the_class_report_counts_passes_and_each_named_mistake(tmp_path):
    counts = {c.exercise: c for c in class_counts(CLASS, ASSIGNMENT, all_exercises())}
    soft, mask = counts["stable_softmax"], counts["causal_mask"]
    # counted: ann's best 00 (passed) and ann's 10 (not attempted), ben's 00 (no max shift), cat's 10 (timeout)
    assert (soft.students, soft.passed, soft.mistakes["no max shift"], soft.not_attempted, soft.other) == (4, 1, 1, 1, 1)
    assert list(soft.mistakes) == [m.name for m in SOFTMAX.mistakes]  # every mistake of the bank, hit or not
    assert (mask.students, mask.passed, mask.mistakes["inverted"]) == (2, 1, 1)
    text = markdown(list(counts.values()))
    assert "| `stable_softmax` | 00_welcome.ipynb | 4 | 1 | no max shift (1) |" in text
    assert "| mistake: sums over the whole tensor | 0 |" in text
    md, png = write_class_report(CLASS, tmp_path / "grades.csv", ASSIGNMENT, all_exercises())
    assert md.read_text() == text and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades_class_report.md", "grades_class_report.png"]


def test_the_cli_reads_every_limit_default_from_limits_py():
    from course_utils.lab.limits import Limits

    grade = build_parser()._subparsers._group_actions[0].choices["grade"]
    given = {a.dest: a.default for a in grade._actions}
    names = {"timeout": "cell_timeout", "probe_timeout": "probe_timeout", "memory_mb": "memory_mb",
             "threads": "threads", "total_timeout": "total_timeout", "max_processes": "processes"}
    assert Limits(**{field: given[flag] for flag, field in names.items()}) == Limits()
