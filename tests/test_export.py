"""`course-lab export`: the nbgrader and otter-grader versions of the course notebooks.

The structure tests always run. The round trips need nbgrader / otter-grader, which are not course
dependencies: they run where those tools are installed, either in this environment or in a separate
venv named by COURSE_EXPORT_ENV (e.g. /tmp/exportenv, see benchmarks/RESULTS_grading.md), and are
skipped otherwise. That venv's kernel must import torch and course_utils.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_utils.checks import all_exercises
from course_utils.lab.release.export import export, hoist_hints
from notebook_tools import NOTEBOOK_DIR, course_notebooks, read

EXERCISES = all_exercises()
GRADED = [p for p in course_notebooks() if read(p).metadata.get("course", {}).get("exercises")]
WELCOME = NOTEBOOK_DIR / "00_welcome.ipynb"


def _exercises(path: Path) -> dict[str, float]:
    return {k: float(v["points"]) for k, v in read(path).metadata["course"]["exercises"].items()}


def _stub(*args, **kwargs):
    raise NotImplementedError("stub")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    export(NOTEBOOK_DIR, root / "nbgrader", "nbgrader")
    export(NOTEBOOK_DIR, root / "otter", "otter")
    return root


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.name)
def test_nbgrader_version_has_a_solution_and_a_grade_cell_per_exercise(path, exported):
    nb = nbformat.read(str(exported / "nbgrader" / "source" / path.stem / path.name), as_version=4)
    nbformat.validate(nb)
    meta = [c.metadata["nbgrader"] for c in nb.cells if "nbgrader" in c.metadata]
    grades = {m["grade_id"].removesuffix("_test"): m["points"] for m in meta if m["grade"]}
    assert grades == _exercises(path)
    assert {m["grade_id"] for m in meta if m["solution"]} == {f"{e}_solution" for e in _exercises(path)}
    assert len({m["grade_id"] for m in meta}) == len(meta)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            assert cell.metadata["nbgrader"]["locked"] and "### BEGIN HIDDEN TESTS" in cell.source
    assert (exported / "nbgrader" / "nbgrader_config.py").exists()


@pytest.mark.slow
@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.name)
def test_nbgrader_grade_cells_pass_the_reference_and_fail_a_stub(path, exported):
    nb = nbformat.read(str(exported / "nbgrader" / "source" / path.stem / path.name), as_version=4)
    for cell in nb.cells:
        if not cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        exercise = EXERCISES[cell.metadata["nbgrader"]["grade_id"].removesuffix("_test")]
        exec(cell.source, {exercise.expected_name: exercise.reference})
        stub = type("Stub", (), {"__init__": _stub}) if exercise.wants_class else _stub
        with pytest.raises(AssertionError, match="not attempted"):
            exec(cell.source, {exercise.expected_name: stub})


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.name)
def test_otter_master_has_a_question_block_per_exercise(path, exported):
    nb = nbformat.read(str(exported / "otter" / path.stem / path.name), as_version=4)
    raw = [c.source for c in nb.cells if c.cell_type == "raw"]
    assert raw[0].startswith("# ASSIGNMENT CONFIG") and f"name: {path.stem}" in raw[0]
    questions = {}
    for text in raw:
        if text.startswith("# BEGIN QUESTION"):
            fields = dict(line.split(": ", 1) for line in text.splitlines()[1:])
            questions[fields["name"]] = float(fields["points"])
    assert questions == _exercises(path)
    for marker in ("QUESTION", "SOLUTION", "TESTS"):
        assert raw.count(f"# END {marker}") == len(questions) == sum(t.startswith(f"# BEGIN {marker}") for t in raw)
    inside, tests = False, []
    for cell in nb.cells:
        if cell.cell_type == "raw":
            inside = {"# BEGIN TESTS": True, "# END TESTS": False}.get(cell.source, inside)
        elif inside:
            tests.append(cell)
    assert len(tests) == 3 * len(questions)
    assert sum(c.source.startswith("# HIDDEN") for c in tests) == 2 * len(questions)
    for cell in tests:  # self-contained OK-format tests whose stored answer is True
        assert "import get_exercise" in cell.source and cell.outputs[0]["data"]["text/plain"] == "True"


@pytest.mark.slow
@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.name)
def test_otter_tests_are_true_for_the_reference_and_false_for_a_stub(path, exported):
    nb = nbformat.read(str(exported / "otter" / path.stem / path.name), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "import get_exercise" in cell.source and "check(" in cell.source:
            name = cell.source.split("get_exercise(")[-1].split(")")[0].strip("'\"")
            exercise = EXERCISES[name]
            *setup, last = cell.source.splitlines()
            for impl, want in ((exercise.reference, True), (_stub, False)):
                if exercise.wants_class and impl is _stub:
                    impl = type("Stub", (), {"__init__": _stub})
                namespace = {exercise.expected_name: impl}
                exec("\n".join(setup), namespace)
                assert eval(last, namespace) is want


def test_hints_stay_visible_above_the_solution_region():
    source = "def f(x):\n    # BEGIN SOLUTION\n    # HINT: add one\n    return x + 1\n    # END SOLUTION"
    assert hoist_hints(source) == "def f(x):\n    # Hint: add one\n    # BEGIN SOLUTION\n    return x + 1\n    # END SOLUTION"


def test_export_rejects_an_unknown_target(tmp_path):
    with pytest.raises(ValueError, match="'nbgrader' or 'otter'"):
        export(NOTEBOOK_DIR, tmp_path / "x", "moodle")
    assert not (tmp_path / "x").exists()


# ---- round trips through the real tools (optional environment) ----------------------------------

def _tool(name: str) -> str | None:
    env = os.environ.get("COURSE_EXPORT_ENV")
    folder = Path(env) / "bin" if env else Path(sys.executable).parent
    path = folder / name
    return str(path) if path.exists() else None


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{Path(cmd[0]).parent}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.slow
@pytest.mark.skipif(_tool("nbgrader") is None, reason="nbgrader is not installed here; set COURSE_EXPORT_ENV to a venv "
                    "with nbgrader (not a course dependency), e.g. /tmp/exportenv")
def test_nbgrader_accepts_the_export_and_grades_solution_full_and_blank_zero(tmp_path):
    nbgrader = _tool("nbgrader")
    course = tmp_path / "course"
    export(WELCOME, course, "nbgrader")
    _run([nbgrader, "generate_assignment", "00_welcome", "--force"], course)
    released = course / "release" / "00_welcome" / "00_welcome.ipynb"
    assert "BEGIN HIDDEN TESTS" not in released.read_text() and "shifted.exp()" not in released.read_text()
    for student, source in (("sol", course / "source"), ("blank", course / "release")):
        target = course / "submitted" / student / "00_welcome"
        target.mkdir(parents=True)
        shutil.copy(source / "00_welcome" / "00_welcome.ipynb", target)
    _run([nbgrader, "autograde", "00_welcome", "--create", "--force"], course)
    _run([nbgrader, "export", "--to", "grades.csv"], course)
    scores = {r["student_id"]: (float(r["score"]), float(r["max_score"])) for r in csv.DictReader((course / "grades.csv").open())}
    assert scores == {"sol": (2.0, 2.0), "blank": (0.0, 2.0)}


@pytest.mark.slow
@pytest.mark.skipif(_tool("otter") is None, reason="otter-grader is not installed here; set COURSE_EXPORT_ENV to a venv "
                    "with otter-grader (not a course dependency), e.g. /tmp/exportenv")
def test_otter_assign_accepts_the_export_and_grades_solution_full_and_blank_zero(tmp_path):
    otter = _tool("otter")
    export(WELCOME, tmp_path / "otter", "otter")
    folder = tmp_path / "otter" / "00_welcome"
    _run([otter, "assign", "00_welcome.ipynb", "dist"], folder)
    student = folder / "dist" / "student" / "00_welcome.ipynb"
    assert "shifted.exp()" not in student.read_text() and "seed=1" not in student.read_text()
    zips = list((folder / "dist" / "autograder").glob("*.zip"))
    assert len(zips) == 1
    scores = {}
    for name, notebook in (("sol", folder / "dist" / "autograder" / "00_welcome.ipynb"), ("blank", student)):
        out = tmp_path / f"run_{name}"
        out.mkdir()
        _run([otter, "run", "-a", str(zips[0]), "-o", str(out), str(notebook)], tmp_path)
        tests = json.loads((out / "results.json").read_text())["tests"]
        scores[name] = [(t["name"], t["score"], t["max_score"]) for t in tests if t["name"] == "stable_softmax"]
    assert scores == {"sol": [("stable_softmax", 2.0, 2.0)], "blank": [("stable_softmax", 0, 2.0)]}
