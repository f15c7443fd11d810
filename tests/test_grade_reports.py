"""What the instructor reads, without kernels: the class report's one-screen picture and its most common
mistake, ``not_attempted`` rows, TOTAL statuses, the Canvas CSV with a roster and its guards
(issues #42.8, #43.9), feedback as Markdown, and errors in cells the course wrote (#37.4)."""

from __future__ import annotations

import csv
import shutil

import mistune
from matplotlib.image import imread

from course_utils.checks import all_exercises
from course_utils.lab.grading.canvas import MATCHED_ON, canvas_export, guard, read_roster
from course_utils.lab.grading.cells import blame_course
from course_utils.lab.grading.class_report import ExerciseCounts, chart, class_counts, markdown
from course_utils.lab.grading.feedback import problems
from course_utils.lab.grading.gradebook import feedback_text, write_gradebook
from course_utils.lab.grading.submissions import course_catalog
from course_utils.lab.results import CellProblem, ExerciseResult, SubmissionResult
from course_utils.lab.grading.totals import student_totals
from grading_fixtures import NAME, WELCOME, solution
from nbformat.v4 import new_code_cell
import nbformat

WELCOME_ONLY = {NAME: 2.0}


def _result(student, rows, rel=None, notebook=NAME, status="ok", cells=()):
    return SubmissionResult(student, rel or f"{student}/{NAME}", notebook, status, rows, list(cells))


def _row(points=0, status="ok", feedback="", mistake=""):
    return ExerciseResult("stable_softmax", points, 2, status, feedback, mistake=mistake)


def test_the_class_picture_fits_a_screen_for_the_whole_course(tmp_path):
    counts = [ExerciseCounts(name, "nb", students=30, passed=i % 30, other=30 - i % 30)
              for i, name in enumerate(sorted(all_exercises()))]
    assert len(counts) > 80
    chart(counts, tmp_path / "class.png")
    height, width = imread(tmp_path / "class.png").shape[:2]
    assert width <= 800 and height <= 1000  # was 800 x 23,002 px: one bar chart per exercise, stacked


def test_the_most_common_mistake_is_right_when_nobody_passed():
    nobody = [_result(s, [_row()]) for s in ("a", "b", "c")]  # three wrong answers no bank mistake explains
    text = markdown(class_counts(nobody, WELCOME_ONLY, all_exercises()))
    assert "| `stable_softmax` | 00_welcome.ipynb | 3 | 0 | no bank mistake matched (3 wrong in other ways) |" in text
    tie = [_result("a", [_row(mistake="no max shift")]), _result("b", [_row(mistake="sums over the whole tensor")])]
    assert "| no max shift (1), sums over the whole tensor (1) |" in markdown(class_counts(tie, WELCOME_ONLY, all_exercises()))


def test_not_attempted_is_its_own_status_and_a_stray_file_leaves_the_total_alone(tmp_path):
    results = [_result("ann", [_row(0, "not_attempted", "not attempted")]),
               _result("ann", [ExerciseResult("", 0, 0, "unreadable", "invalid JSON")], "ann/notes.txt", "", "unreadable"),
               _result("ben", [_row(2)])]
    counts = class_counts(results, WELCOME_ONLY, all_exercises())[0]
    assert (counts.not_attempted, counts.other, counts.passed) == (1, 0, 1)
    assert problems(results[0]) == []  # not written yet is not a problem of the run
    write_gradebook(results, tmp_path / "grades.csv", WELCOME_ONLY)
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [r["status"] for r in rows if r["exercise"] == "stable_softmax"] == ["not_attempted", "ok"]
    total = {r["student"]: r["status"] for r in rows if r["exercise"] == "TOTAL"}
    assert total == {"ann": "ok", "ben": "ok"}  # ann's stray notes.txt was "unreadable" here
    assert "not counted: ann/notes.txt" in next(r["feedback"] for r in rows if r["exercise"] == "TOTAL")


ROSTER = '''Student,ID,SIS User ID,SIS Login ID,Section,00_welcome (123)
Points Possible,,,,,2
"Anning, Mary",1001,S-1,mary.anning,Lab A,
"Babbage, Charles",1002,S-2,cbabbage,Lab B,
'''


def test_the_canvas_csv_takes_ids_from_the_roster_and_says_what_it_matched_on(tmp_path):
    (tmp_path / "roster.csv").write_text(ROSTER)
    roster = read_roster(tmp_path / "roster.csv")
    results = [_result("Mary.Anning", [_row(2)]), _result("cbabbage", [_row(0)]), _result("stranger", [_row(2)])]
    notes = []
    write_gradebook(results, tmp_path / "grades.csv", WELCOME_ONLY, roster=roster, notes=notes)
    rows = list(csv.reader((tmp_path / "grades_canvas.csv").open()))
    assert rows[2] == ["Anning, Mary", "1001", "S-1", "mary.anning", "Lab A", "2"]
    assert rows[3] == ["Babbage, Charles", "1002", "S-2", "cbabbage", "Lab B", "0"]
    assert rows[4] == ["stranger", "", "", "stranger", "", "2"]
    assert notes[0] == f"canvas: matched 2 of 3 student(s) to the roster by {MATCHED_ON}"
    assert notes[1] == "canvas: not in the roster (rows without ID): stranger"
    assert (tmp_path / "grades_canvas.csv").read_text().startswith('"Student","ID"')  # every field quoted


def test_names_and_logins_cannot_be_formulas_or_canvas_rows(tmp_path):
    for text in (" =1+1", "\t=1+1", "  +SUM(A1)", "=HYPERLINK(1)", "@x", "-1"):
        assert guard(text).startswith("'"), text
    assert guard("Zoë") == "Zoë" and guard("a=b") == "a=b"
    odd = ["Points Possible", "Student", "-dash", "+plus", "=SUM(A1)", "@at", " =spaced", "\t=tabbed", "ok.login@uni.edu"]
    export = canvas_export(student_totals([_result(s, [_row(2)]) for s in odd], WELCOME_ONLY), WELCOME_ONLY)
    body = export.rows[2:]
    names, logins = [r[0] for r in body], [r[3] for r in body]
    assert names[:2] == ["student folder 'Points Possible'", "student folder 'Student'"]
    assert not any(n.lstrip(" \t")[:1] in "=+-@" for n in names)  # each guarded with an apostrophe
    # a login is never given an apostrophe (Canvas would not match it): one that is not plainly safe is left out
    assert logins == ["", "Student", "", "", "", "", "", "", "ok.login@uni.edu"]
    assert len(export.unsafe_logins) == 7
    write_gradebook([_result(" =cmd|' /C calc'!A0", [_row(2)])], tmp_path / "g.csv", WELCOME_ONLY)
    cells = [c for row in csv.reader((tmp_path / "g.csv").open()) for c in row]
    assert not any(c.lstrip(" \t")[:1] in ("=", "+", "@") for c in cells)  # the instructor's CSV is guarded too


def test_feedback_renders_as_markdown_without_stray_backslashes_and_places_are_words():
    row = ExerciseResult("stable_softmax", 0, 2, "ok",
                         "values differ from the reference[0]: at index (1,) expected 0.5, got 0.7; see `x[0]` and a[b]")
    text = feedback_text("ann", [_result("ann", [row])])
    html = mistune.html(text)
    assert "\\" not in html
    assert "the reference (in item 0 of the answer): at index" in html
    assert "<code>x[0]</code>" in html and "a[b]" in html  # a code span as written; a bracket stays a bracket
    assert "reference[0]" not in html


def test_an_error_in_a_cell_the_course_wrote_is_the_courses(tmp_path):
    """Issue #37.4: 07's assert on another CPU became "cell error" for every student."""
    course = solution()
    planted = "import os\nassert os.cpu_count() < 0, 'this cell needs another CPU'"
    course.cells.insert(2, new_code_cell(planted))
    source = tmp_path / "source"
    source.mkdir()
    nbformat.write(course, str(source / NAME))
    shutil.copy(WELCOME, tmp_path / "unused.ipynb")
    entry = course_catalog(source)[NAME]
    handed_in = solution()
    handed_in.cells.insert(2, new_code_cell(planted))
    handed_in.cells.insert(3, new_code_cell("raise RuntimeError('my own cell')"))
    check = next(i for i, c in enumerate(handed_in.cells) if "check_stable_softmax(" in c.source)
    found = [CellProblem(2, "error", "AssertionError: this cell needs another CPU"),
             CellProblem(3, "error", "RuntimeError: my own cell"),
             CellProblem(check, "error", "ValueError: from the student's function")]
    kinds = [p.kind for p in blame_course(found, handed_in, entry.course_cells)]
    assert kinds == ["course_error", "error", "error"]  # a course cell that calls the student's code is not the course's
    edited = solution()
    edited.cells.insert(2, new_code_cell(planted + "  # changed"))
    assert blame_course(found[:1], edited, entry.course_cells)[0].kind == "error"  # the student rewrote it
    result = _result("ann", [_row(2)], cells=blame_course(found[:2], handed_in, entry.course_cells))
    assert problems(result) == ["cell error", "course cell error"]
    assert "cell 3: course error: AssertionError" in feedback_text("ann", [result])
