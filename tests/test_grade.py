"""`course-lab grade`, end to end: every good, broken and hostile submission in the fixture folder
(tests/grading_fixtures.py) gets its row with the stated status and points, the grader never runs
student code in its own process, and the gradebook files are complete and safe to open."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from course_utils.lab.gradebook import csv_rows, feedback_names, write_gradebook
from course_utils.lab.grade import ExerciseResult, SubmissionResult
from course_utils.lab.hidden import load_hidden_tests
from course_utils.lab.probe import NotDefined, StudentRaised, decode_reply, probe_code, snapshot_code
from course_utils.lab.submissions import course_catalog, find_submissions, identify, read_submission, Submission
from grading_fixtures import FORMULA, ODD_A, ODD_B, WELCOME, build_folder, solution

CELL_TIMEOUT, PROBE_TIMEOUT = 15, 5  # generous: the machine may be shared and slow


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "course_utils.lab.cli", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("grading")
    expected = build_folder(root)
    out = root / "out" / "grades.csv"
    proc = _cli("grade", str(root / "subs"), "--out", str(out), "--source", str(root / "source"),
                "--hidden-tests", str(root / "hidden"), "--jobs", "2", "--timeout", str(CELL_TIMEOUT),
                "--probe-timeout", str(PROBE_TIMEOUT), "--memory-mb", "2048")
    rows = list(csv.DictReader(out.open(encoding="utf-8"))) if out.exists() else []
    return {"root": root, "expected": expected, "proc": proc, "rows": rows, "out": out}


@pytest.mark.slow
def test_the_grader_finishes_and_prints_a_summary(graded):
    proc = graded["proc"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    n = len(graded["expected"])
    assert f"graded {n} submission(s)" in proc.stdout
    assert "full marks" in proc.stdout and "zero" in proc.stdout and "with errors" in proc.stdout
    assert "grading" in proc.stderr and f"{n}/{n}" in proc.stderr  # the tqdm bar reached the end


@pytest.mark.slow
def test_every_submission_has_its_rows(graded):
    graded_rows = [r for r in graded["rows"] if r["exercise"] != "TOTAL"]
    assert {r["submission"].lstrip("'") for r in graded_rows} == set(graded["expected"])
    assert len(graded_rows) == sum(len(e["rows"]) for e in graded["expected"].values())


@pytest.mark.slow
def test_each_fixture_gets_its_status_points_and_feedback(graded):
    by_key = {(r["submission"].lstrip("'"), r["exercise"]): r for r in graded["rows"] if r["exercise"] != "TOTAL"}
    wrong = []
    for rel, facts in graded["expected"].items():
        for number, (exercise, (status, points)) in enumerate(facts["rows"].items()):
            row = by_key.get((rel, exercise))
            if row is None:
                wrong.append(f"{rel} {exercise}: no row")
                continue
            if (row["status"], float(row["points"])) != (status, points):
                wrong.append(f"{rel} {exercise}: got {row['status']}, {row['points']} points; expected {status}, {points}: {row['feedback']}")
            if number == 0 and facts["feedback"] not in row["feedback"]:
                wrong.append(f"{rel} {exercise}: feedback {row['feedback']!r} lacks {facts['feedback']!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_cell_problems_are_reported_in_the_feedback_files(graded):
    rows = graded["rows"]
    folder = graded["out"].with_name("grades_feedback")
    wrong = []
    for rel, facts in graded["expected"].items():
        if not facts["note"]:
            continue
        name = next(r["feedback_file"] for r in rows if r["submission"].lstrip("'") == rel)
        if facts["note"] not in (folder / name).read_text(encoding="utf-8"):
            wrong.append(f"{rel}: {name} lacks {facts['note']!r}")
    assert not wrong, "\n".join(wrong)
    flood = (folder / "flood.md").read_text(encoding="utf-8")
    assert len(flood) < 5_000 and "spam" not in flood  # megabytes printed, a short note kept


@pytest.mark.slow
def test_a_hostile_answer_runs_no_code_in_the_grader(graded):
    assert not (graded["root"] / "pwned").exists()


@pytest.mark.slow
def test_odd_and_duplicate_names_are_all_kept(graded):
    totals = {r["student"]: r for r in graded["rows"] if r["exercise"] == "TOTAL"}
    assert totals["alice"]["points"] == "4" and totals["alice"]["max_points"] == "4"  # both alice submissions
    assert totals[ODD_A]["feedback_file"] != totals[ODD_B]["feedback_file"]
    folder = graded["out"].with_name("grades_feedback")
    assert "not attempted" in (folder / totals[ODD_B]["feedback_file"]).read_text(encoding="utf-8")
    assert "passed all" in (folder / totals[ODD_A]["feedback_file"]).read_text(encoding="utf-8")
    assert len(list(folder.glob("*.md"))) == len(totals)
    assert "'" + FORMULA in totals  # a spreadsheet will not run it as a formula
    leftovers = sorted(p.name for p in graded["out"].parent.iterdir())
    assert leftovers == ["grades.csv", "grades_feedback"]  # no temporary files left behind


# ---- pieces, without a kernel ----------------------------------------------------------------

def test_decode_refuses_code_carrying_answers(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    buffer = io.BytesIO()
    torch.save(Evil(), buffer)
    import base64

    envelope = json.dumps({"kind": "value", "data": base64.b64encode(buffer.getvalue()).decode()})
    with pytest.raises(StudentRaised, match="cannot read back"):
        decode_reply("ok", repr(envelope))
    assert not marker.exists()
    buffer = io.BytesIO()
    torch.save({"probs": torch.ones(2)}, buffer)
    good = json.dumps({"kind": "value", "data": base64.b64encode(buffer.getvalue()).decode()})
    assert torch.equal(decode_reply("ok", repr(good))["probs"], torch.ones(2))
    with pytest.raises(NotDefined):
        decode_reply("ok", repr(json.dumps({"kind": "missing"})))


def test_probe_code_calls_only_the_students_own_object():
    code = probe_code("stable_softmax", (torch.zeros(2),), {})
    assert "course_utils" not in code and "_course_lab_saved" in code
    namespace: dict = {"__name__": "__main__"}
    exec(compile("def stable_softmax(x):\n    return x + 1\n", "<cell>", "exec"), namespace)
    exec(snapshot_code(["stable_softmax"], overwrite=True), namespace)
    namespace["stable_softmax"] = torch.softmax  # a later import of a reference under the same name
    exec(code, namespace)
    reply = json.loads(namespace["_course_lab_result"])
    assert reply["kind"] == "value"
    assert torch.equal(decode_reply("ok", repr(namespace["_course_lab_result"])), torch.ones(2))
    with pytest.raises(ValueError, match="identifier"):
        probe_code("os.system", (), {})


def test_feedback_names_never_collide():
    names = feedback_names(["a b", "a_b", "A_B", "", "../etc", "ok"])
    assert len(set(n.lower() for n in names.values())) == 6
    assert all("/" not in n and not n.startswith(".") for n in names.values())


def test_csv_cells_cannot_be_formulas():
    result = SubmissionResult("=cmd", "=cmd.ipynb", "00_welcome.ipynb", "ok",
                              [ExerciseResult("stable_softmax", 2, 2, "ok", "@SUM(A1)")])
    rows = csv_rows([result], {"=cmd": "cmd.md"})
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)


def test_write_gradebook_replaces_the_old_one_whole(tmp_path):
    out = tmp_path / "grades.csv"
    first = [SubmissionResult("ann", "ann.ipynb", "00_welcome.ipynb", "ok", [ExerciseResult("stable_softmax", 2, 2, "ok", "passed")])]
    second = [SubmissionResult("ben", "ben.ipynb", "00_welcome.ipynb", "ok", [ExerciseResult("stable_softmax", 0, 2, "ok", "not attempted")])]
    write_gradebook(first, out)
    write_gradebook(second, out)
    assert "ben" in out.read_text() and "ann" not in out.read_text()
    assert sorted(p.name for p in (tmp_path / "grades_feedback").iterdir()) == ["ben.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv", "grades_feedback"]


def test_submissions_are_found_read_and_identified(tmp_path):
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "ann" / ".ipynb_checkpoints" / "00_welcome-checkpoint.ipynb").write_text("{}")
    nbformat.write(solution(), str(tmp_path / "ann" / "00_welcome.ipynb"))
    nbformat.write(solution(), str(tmp_path / "renamed.ipynb"))
    (tmp_path / ".DS_Store").write_text("x")
    subs = find_submissions(tmp_path)
    assert [(s.student, s.rel) for s in subs] == [("ann", "ann/00_welcome.ipynb"), ("renamed", "renamed.ipynb")]
    catalog = course_catalog(WELCOME.parent)
    for sub in subs:
        nb, problem = read_submission(sub.path)
        assert problem == "" and identify(sub, nb, catalog) == "00_welcome.ipynb"
    stripped = solution()
    stripped.metadata.pop("course")
    assert identify(Submission("x", tmp_path / "x.ipynb", "x.ipynb"), stripped, catalog) == "00_welcome.ipynb"  # by its code
    assert catalog["00_welcome.ipynb"].points == {"stable_softmax": 2.0}


def test_hidden_tests_must_name_course_exercises(tmp_path):
    (tmp_path / "t.py").write_text("def test_no_such_exercise(student):\n    pass\n")
    with pytest.raises(ValueError, match="t.py: test_no_such_exercise does not name a course exercise"):
        load_hidden_tests(tmp_path, {"stable_softmax"})
    (tmp_path / "t.py").write_text("def test_stable_softmax__rows(student):\n    pass\n")
    tests = load_hidden_tests(tmp_path, {"stable_softmax"})
    assert [f.__name__ for f in tests.functions["stable_softmax"]] == ["test_stable_softmax__rows"]


def test_cli_rejects_a_missing_folder(tmp_path):
    proc = _cli("grade", str(tmp_path / "nope"), "--out", str(tmp_path / "g.csv"))
    assert proc.returncode == 2 and "no such folder" in proc.stderr
    assert not (tmp_path / "g.csv").exists()
