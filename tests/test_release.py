"""`course-lab release`: the student version hides every solution, clears outputs, runs top to
bottom with every check saying 'not attempted', and bad input never leaves half a release."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from course_utils.lab.release import ReleaseError, release
from course_utils.lab.solutions import solution_lines, strip_solutions
from course_utils.checks import all_exercises
from notebook_tools import NOTEBOOK_DIR, check_cells, course_notebooks, output_text, read

NOTEBOOKS = course_notebooks()
EXERCISES = all_exercises()


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release") / "student"
    release(NOTEBOOK_DIR, out)
    return out


def test_release_keeps_file_names(student_dir):
    assert sorted(p.name for p in student_dir.glob("*.ipynb")) == sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_solution_line_leaks(path, student_dir):
    solution, student = read(path), read(student_dir / path.name)
    assert len(solution.cells) == len(student.cells)
    regions = 0
    for sol_cell, stu_cell in zip(solution.cells, student.cells):
        hidden = {line.strip() for line in solution_lines(sol_cell.source)}
        kept = {line.strip() for line in strip_solutions(sol_cell.source).splitlines()} if sol_cell.cell_type == "code" else set()
        leaked = (hidden - kept) & {line.strip() for line in stu_cell.source.splitlines()}
        assert not leaked, f"solution lines leaked into the student version: {leaked}"
        regions += bool(hidden)
        if hidden:
            assert "raise NotImplementedError(" in stu_cell.source
    metadata_exercises = solution.metadata.get("course", {}).get("exercises", {})
    assert regions >= len(metadata_exercises) > 0 or not metadata_exercises


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_and_widget_state_are_cleared(path, student_dir):
    student = read(student_dir / path.name)
    assert "widgets" not in student.metadata
    for cell in student.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_student_version_runs_and_checks_say_not_attempted(path, student_dir, tmp_path):
    nb = read(student_dir / path.name)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [output_text(c) for c in nb.cells if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    assert not errors, f"uncaught errors in the student version: {errors}"
    for index, exercise, argument in check_cells(nb):
        if exercise in EXERCISES and argument == EXERCISES[exercise].expected_name:
            assert "not attempted" in output_text(nb.cells[index]), f"cell {index}: {output_text(nb.cells[index])!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_solution_notebooks_pass_their_checks(path):
    nb = read(path)
    graded = [(i, e) for i, e, arg in check_cells(nb) if e in EXERCISES and arg == EXERCISES[e].expected_name]
    assert len(graded) >= len(nb.metadata.get("course", {}).get("exercises", {}))
    for index, exercise in graded:
        assert output_text(nb.cells[index]).startswith("✅"), f"{path.name} cell {index}: {output_text(nb.cells[index])!r}"


# ---- bad input: a clear message naming file and cell, and nothing written ----------------------

def _notebook_with(source: str, path: Path) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(source)])
    nbformat.write(nb, str(path))
    return path


def _run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "course_utils.lab.cli", *args], capture_output=True, text=True)


def test_cli_release_writes_student_notebooks(tmp_path):
    result = _run_cli("release", "--source", str(NOTEBOOK_DIR / "00_welcome.ipynb"), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "00_welcome.ipynb").exists()


@pytest.mark.parametrize("source,fragment", [
    ("def f():\n    # BEGIN SOLUTION\n    return 1\n", "cell 1: the solution region opened at line 2 is never closed"),
    ("def f():\n    return 1\n    # END SOLUTION\n", "cell 1: line 3 closes a solution region that was never opened"),
    ("# BEGIN SOLUTION\nx = 2\n# END SOLUTION\n", "cell 1: the solution region at line 1 is not inside a function body"),
])
def test_unmatched_markers_fail_without_writing(tmp_path, source, fragment):
    bad = _notebook_with(source, tmp_path / "bad.ipynb")
    out = tmp_path / "out"
    result = _run_cli("release", "--source", str(tmp_path), "--out", str(out))
    assert result.returncode != 0
    assert "bad.ipynb" in result.stderr and fragment in result.stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == [bad.name]


def test_missing_path_and_non_notebook_fail_clearly(tmp_path):
    result = _run_cli("release", "--source", str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert result.returncode != 0 and "no such file or directory" in result.stderr
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    result = _run_cli("release", "--source", str(text), "--out", str(tmp_path / "out"))
    assert result.returncode != 0 and "not a notebook" in result.stderr
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    with pytest.raises(ReleaseError, match="broken.ipynb: not a readable notebook"):
        release(broken, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_failed_release_leaves_an_existing_release_untouched(tmp_path):
    out = tmp_path / "out"
    release(NOTEBOOK_DIR / "00_welcome.ipynb", out)
    before = (out / "00_welcome.ipynb").read_bytes()
    src = tmp_path / "src"
    src.mkdir()
    _notebook_with("def f():\n    # BEGIN SOLUTION\n", src / "bad.ipynb")
    with pytest.raises(ReleaseError):
        release(src, out)
    assert (out / "00_welcome.ipynb").read_bytes() == before


def test_hint_lines_become_the_stub_message():
    stub = strip_solutions("def f(x):\n    # BEGIN SOLUTION\n    # HINT: add one\n    return x + 1\n    # END SOLUTION\n")
    assert stub == "def f(x):\n    raise NotImplementedError('add one')"
    namespace: dict = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match="add one"):
        namespace["f"](1)
