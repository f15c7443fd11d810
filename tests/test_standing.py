"""``course-lab progress``: a student's standing from their own saved notebooks, public checks only."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from course_utils.lab.results import ExerciseResult
from course_utils.lab.release.standing import _verdict, changed_notebooks, standing_lines
from course_utils.lab.release.workspace import update_workspace

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "row, verdict",
    [
        (ExerciseResult("f", 2, 2, "ok", "passed"), "✅ passed"),
        (ExerciseResult("f", 0, 2, "ok", "not attempted: `f` still raises NotImplementedError"), "⏳ not attempted yet"),
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
