"""`course-lab release`: the student version hides every solution, clears outputs, runs top to
bottom with every check saying 'not attempted', and bad input never leaves half a release."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from course_utils.env.notebook_run import CourseNotebookClient

from course_utils.lab.release.release import ReleaseError, release
from course_utils.lab.release.leaks import RUN_TOKENS, find_leak, tokens
from course_utils.lab.release.solutions import solution_lines, strip_solutions
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


LONG_LINE = 24  # shorter solution lines are idioms any cell may hold (`with torch.no_grad():`, `super().__init__()`)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_solution_line_stands_anywhere_in_the_student_notebook(path, student_dir):
    """Not in another cell's given code, not in the text: a solution line that the text spells out, or that a
    given class already holds, hands the exercise over (05's W_QKV line in its text did; 02's shape line did)."""
    hidden = set()
    for cell in read(path).cells:
        if cell.cell_type == "code":
            hidden |= {line.split("  #")[0].strip() for line in solution_lines(cell.source)}
    hidden = {line for line in hidden if len(line) >= LONG_LINE and not line.startswith("#")}
    text = "\n".join(cell.source for cell in read(student_dir / path.name).cells)
    assert not sorted(line for line in hidden if line in text), "solution lines stand in the student version"


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
    client = CourseNotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
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


@pytest.mark.slow  # subprocesses or training: not in the quick loop (make test-fast)
def test_cli_release_writes_student_notebooks(tmp_path):
    result = _run_cli("release", "--source", str(NOTEBOOK_DIR / "00_welcome.ipynb"), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "00_welcome.ipynb").exists()


@pytest.mark.slow  # subprocesses or training: not in the quick loop (make test-fast)
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


@pytest.mark.slow  # subprocesses or training: not in the quick loop (make test-fast)
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


def test_stubs_say_what_to_do_and_where_help_is_never_the_solution():
    source = "def f(x):\n    # BEGIN SOLUTION\n    # HINT: add one\n    return x + 1\n    # END SOLUTION\n"
    stub = strip_solutions(source, exercises={"f": "add_one"})
    assert "add one" not in stub and "x + 1" not in stub
    assert "hint('add_one')" in stub
    namespace: dict = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match="`f` is yours to write"):
        namespace["f"](1)


def test_every_released_stub_is_the_generic_message(student_dir):
    for path in NOTEBOOKS:
        for cell in read(student_dir / path.name).cells:
            for line in cell.source.splitlines() if cell.cell_type == "code" else []:
                if "raise NotImplementedError(" in line:
                    assert "is yours to write" in line, f"{path.name}: {line.strip()}"


# ---- leaks: a hint may teach, never hand over the code ----------------------------------------
SOLUTION = "    scores = q @ k.transpose(-2, -1)\n    return scores / math.sqrt(q.shape[-1])"


@pytest.mark.parametrize("text,leaks", [
    ("the scores are q @ k.transpose(-2, -1), then scale", True),       # a run of 12 tokens
    ("scale with scores / math.sqrt(q.shape[-1])", True),               # a run of 8+ tokens
    ("k.transpose(-2, -1) swaps the last two axes", True),              # exactly 10 tokens of the solution
    ("transpose(-2, -1) swaps the last two axes", True),                # 8 tokens: the threshold
    ("(-2, -1) are the last two axes", False),                          # 7 tokens: a hint, not the answer
    ("multiply each query by every key, then divide by the square root of d_head", False),
])
def test_leak_threshold_both_ways(text, leaks):
    assert (find_leak(text, [SOLUTION]) is not None) == leaks, find_leak(text, [SOLUTION])


def test_run_threshold_is_exact():
    code_tokens = tokens("q @ k.transpose(-2, -1)")
    assert find_leak(" ".join(code_tokens[:RUN_TOKENS]), [SOLUTION]) is not None
    assert find_leak(" ".join(code_tokens[:RUN_TOKENS - 1]), [SOLUTION]) is None


def _exercise_notebook(tmp_path, hint_cell: str | None) -> Path:
    cells = [nbformat.v4.new_code_cell("def stable_softmax(x):\n    # BEGIN SOLUTION\n"
                                       "    shifted = x - x.amax(dim=-1, keepdim=True)\n"
                                       "    return shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)\n"
                                       "    # END SOLUTION")]
    if hint_cell is not None:
        cells.append(nbformat.v4.new_markdown_cell(hint_cell))
    nb = nbformat.v4.new_notebook(cells=cells)
    path = tmp_path / "ex.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_release_refuses_a_details_hint_that_gives_the_code(tmp_path):
    leaking = "<details><summary>Hint</summary>shifted = x - x.amax(dim=-1, keepdim=True)</details>"
    with pytest.raises(ReleaseError, match="hint cell 1 gives the solution away"):
        release(_exercise_notebook(tmp_path, leaking), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    fine = "<details><summary>Hint</summary>subtract each row's largest logit first</details>"
    release(_exercise_notebook(tmp_path, fine), tmp_path / "out")
    assert (tmp_path / "out" / "ex.ipynb").exists()


def test_release_refuses_an_exercise_hint_that_gives_the_code(tmp_path, monkeypatch):
    from course_utils.checks import welcome

    path = _exercise_notebook(tmp_path, None)
    nb = read(path)
    nb.metadata["course"] = {"exercises": {"stable_softmax": {"points": 2, "difficulty": 1, "minutes": 5}}}
    nbformat.write(nb, str(path))
    monkeypatch.setattr(welcome.STABLE_SOFTMAX, "hints", ["try shifted.exp() / shifted.exp().sum(dim=-1)"])
    with pytest.raises(ReleaseError, match="hint 1 of exercise 'stable_softmax' gives the solution away"):
        release(path, tmp_path / "out")


def _welcome_exercise_notebook(tmp_path):
    path = _exercise_notebook(tmp_path, None)
    nb = read(path)
    nb.metadata["course"] = {"exercises": {"stable_softmax": {"points": 2, "difficulty": 1, "minutes": 5}}}
    nbformat.write(nb, str(path))
    return path


@pytest.mark.parametrize("message, leaks", [
    ("divide by shifted.exp().sum(dim=-1, keepdim=True) instead", True),
    ("divide by the row's total, keeping the summed dimension so it broadcasts", False),
])
def test_release_checks_the_message_of_each_mistake_both_ways(tmp_path, monkeypatch, message, leaks):
    """A student sees a mistake's message by handing in that mistake: it must not be the answer either."""
    from course_utils.checks import welcome
    from course_utils.checks.core import Mistake

    path = _welcome_exercise_notebook(tmp_path)
    mistakes = [*welcome.STABLE_SOFTMAX.mistakes, Mistake("leaky", lambda x: x, message)]
    monkeypatch.setattr(welcome.STABLE_SOFTMAX, "mistakes", mistakes)
    if leaks:
        with pytest.raises(ReleaseError, match="mistake 'leaky' of exercise 'stable_softmax' gives the solution away"):
            release(path, tmp_path / "out")
    else:
        release(path, tmp_path / "out")
        assert (tmp_path / "out" / "ex.ipynb").exists()


def test_release_refuses_a_hand_written_stub_that_gives_the_code(tmp_path):
    nb = read(_exercise_notebook(tmp_path, None))
    nb.cells.append(nbformat.v4.new_code_cell(
        "def helper(x):\n    raise NotImplementedError('return shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)')"))
    path = tmp_path / "stub.ipynb"
    nbformat.write(nb, str(path))
    with pytest.raises(ReleaseError, match="the stub in cell 1 gives the solution away"):
        release(path, tmp_path / "out")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_course_hint_repeats_its_solution(path):
    """Hints, and the messages a check prints for each known mistake or broken property."""
    nb = read(path)
    solutions = [line for cell in nb.cells if cell.cell_type == "code" for line in [cell.source] if "# BEGIN SOLUTION" in line]
    for name in nb.metadata.get("course", {}).get("exercises", {}):
        exercise = EXERCISES[name]
        texts = [(f"hint {level}", text) for level, text in enumerate(exercise.hints, 1)]
        texts += [(f"mistake {m.name!r}", m.hint) for m in exercise.mistakes]
        texts += [(f"property {p.name!r}", p.hint) for p in exercise.properties]
        for where, text in texts:
            assert find_leak(text, solutions) is None, f"{name} {where}: {text!r}"
