"""``course-lab progress``: a student's standing from their own saved notebooks, public checks only."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from course_utils.lab.results import ExerciseResult
from course_utils.lab.grading.standing import _verdict, changed_notebooks, standing_lines
from course_utils.lab.release.workspace import update_workspace

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "row, verdict",
    [
        (ExerciseResult("f", 2, 2, "ok", "passed"), "✅ passed"),
        (ExerciseResult("f", 0, 2, "not_attempted", "not attempted"), "⏳ not attempted yet"),
        (ExerciseResult("f", 0, 2, "not_defined", "the notebook defines no `f`"), "⏳ not attempted yet"),
        # the status says what happened, never the text: a hint that mentions the stub is still a wrong answer
        (ExerciseResult("f", 0, 2, "ok", "not attempted the max: NotImplementedError is not it"),
         "❌ not attempted the max: NotImplementedError is not it"),
        (ExerciseResult("f", 0, 2, "ok", "softmax over the wrong axis: normalise over dim=-1\nmore"),
         "❌ softmax over the wrong axis: normalise over dim=-1"),
        (ExerciseResult("f", 0, 2, "timeout", ""), "❌ timeout"),
    ],
)
def test_verdicts(row, verdict):
    assert _verdict(row) == verdict


def _answer(path: Path, body: str) -> None:
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "def stable_softmax" in c.source)
    cell.source = cell.source.split("    raise NotImplementedError")[0] + body
    nbformat.write(nb, str(path))


def test_only_changed_notebooks_run_and_a_wrong_answer_gets_its_hint(tmp_path):
    mine = tmp_path / "student"
    source = tmp_path / "course"
    source.mkdir()
    for name in ("00_welcome.ipynb", "03_attention.ipynb"):
        (source / name).write_bytes((ROOT / "notebooks" / name).read_bytes())
    update_workspace(source, mine)
    assert changed_notebooks(mine) == []
    _answer(mine / "00_welcome.ipynb", "    return x.exp() / x.exp().sum(dim=-1, keepdim=True)\n")  # not stable
    assert changed_notebooks(mine) == ["00_welcome.ipynb"]

    lines = standing_lines(mine, source, progress=False)
    welcome = next(line for line in lines if line.startswith("00_welcome"))
    assert "stable_softmax" in welcome and "❌" in welcome and welcome.endswith("0 / 2")
    attention = [line for line in lines if line.startswith("03_attention")]
    points = sum(e["points"] for e in nbformat.read(source / "03_attention.ipynb", as_version=4)
                 .metadata["course"]["exercises"].values())
    assert len(attention) == 1 and "not started" in attention[0] and attention[0].endswith(f"0 / {points}")
    assert lines[-1].startswith(f"public checks: 0 of {2 + points} points")
    assert (mine / "00_welcome.ipynb").read_text().count("x.exp()") >= 1  # the student's file is untouched


def test_no_copy_yet_says_how_to_make_one(tmp_path):
    with pytest.raises(ValueError, match="make lab"):
        standing_lines(tmp_path / "nothing", ROOT / "notebooks")


def _course_and_copy(tmp_path, names=("00_welcome.ipynb",)):
    mine, source = tmp_path / "student", tmp_path / "course"
    source.mkdir()
    for name in names:
        (source / name).write_bytes((ROOT / "notebooks" / name).read_bytes())
    update_workspace(source, mine)
    return mine, source


def test_a_verdict_is_kept_by_the_notebooks_hash_and_a_cell_that_raises_is_named(tmp_path, monkeypatch):
    import course_utils.lab.grading.folder as folder_module
    from course_utils.lab.grading import verdict_cache

    graded, first_run = [], []
    real = folder_module.grade_folder

    def counting(folder, *args, **kwargs):
        """Counts the notebooks handed to the grader; runs the real one once (its result stands in after)."""
        graded.append(sorted(p.name for p in Path(folder).rglob("*.ipynb")))
        if not first_run:
            first_run.append(real(folder, *args, **kwargs))
        return first_run[0]

    monkeypatch.setattr(folder_module, "grade_folder", counting)
    mine, source = _course_and_copy(tmp_path)
    _answer(mine / "00_welcome.ipynb", "    return x.exp() / x.exp().sum(dim=-1, keepdim=True)\n")
    nb = nbformat.read(str(mine / "00_welcome.ipynb"), as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell("total = undefined_name + 1"))
    nbformat.write(nb, str(mine / "00_welcome.ipynb"))

    first = standing_lines(mine, source, progress=False)
    assert graded == [["00_welcome.ipynb"]]
    assert [line for line in first if " cell " in line] == [
        f"{'00_welcome':<32} cell 4 raises NameError: name 'undefined_name' is not defined "
        "(Run All stops here)  `total = undefined_name + 1`"
    ]
    assert any("stable_softmax" in line and "❌" in line for line in first)  # the rest still checked
    second = standing_lines(mine, source, progress=False)
    assert graded == [["00_welcome.ipynb"]]  # not executed again
    assert second[:-1] == first[:-1] and "1 unchanged since last checked, not run again" in second[-1]
    nb.cells[3].source = "total = 1"
    nbformat.write(nb, str(mine / "00_welcome.ipynb"))
    standing_lines(mine, source, progress=False)  # saved again: checked again
    assert graded == [["00_welcome.ipynb"]] * 2
    monkeypatch.setattr(verdict_cache, "_code_fingerprint", lambda: "the course's code changed")
    standing_lines(mine, source, progress=False)
    assert graded == [["00_welcome.ipynb"]] * 3


def test_a_notebook_named_on_the_command_line_is_the_only_one_reported(tmp_path, capsys):
    from course_utils.lab.cli import main

    mine, source = _course_and_copy(tmp_path, ("00_welcome.ipynb", "03_attention.ipynb"))
    for query in ("03", "03_attention", "03_attention.ipynb"):
        lines = standing_lines(mine, source, progress=False, only=[query])
        assert [line.split()[0] for line in lines[:-1]] == ["03_attention"] and "not started" in lines[0]
    assert main(["progress", "07", "--folder", str(mine), "--source", str(source)]) == 2
    assert "'07' matches none of the notebooks here (00_welcome, 03_attention)" in capsys.readouterr().err
