"""``course-lab diff NN``: what the course changed in a notebook, beside the student's copy."""

from __future__ import annotations

import nbformat
import pytest

from course_utils.lab.cli import main
from course_utils.lab.release.notebook_diff import diff_cells
from course_utils.lab.release.workspace import find_notebook, update_workspace


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(c[3:]) if c.startswith("md:") else nbformat.v4.new_code_cell(c)
                for c in cells]
    return nb


def test_changed_added_and_removed_cells_are_named_with_their_lines():
    theirs = _nb("md:Intro.", "x = 1\ny = 2", "md:Old note.", "print(x)  # my work")
    new = _nb("md:Intro.", "x = 1\ny = 3", "print(x)  # my work", "md:A new exercise.")
    lines = diff_cells(theirs, new)
    assert lines[:3] == ["cell 2 (code) differs:", "@@ -1,2 +1,2 @@", " x = 1"]
    assert "-y = 2" in lines and "+y = 3" in lines
    assert "cell 3 (markdown) only in your copy:" in lines and "-Old note." in lines
    assert "cell 4 (markdown) new in the course's version:" in lines and "+A new exercise." in lines
    assert not any("my work" in line for line in lines)  # an unchanged cell is not shown
    theirs.cells[1].outputs = [nbformat.v4.new_output("stream", text="out")]
    assert diff_cells(theirs, theirs) == [] and diff_cells(_nb("a = 1"), _nb("a = 1")) == []


def test_find_notebook_takes_a_number_a_stem_or_a_file_name():
    names = ["00_welcome.ipynb", "03_attention.ipynb"]
    assert find_notebook(names, "03") == find_notebook(names, "03_attention") == "03_attention.ipynb"
    assert find_notebook(names, "03_attention.ipynb") == "03_attention.ipynb"
    with pytest.raises(ValueError, match=r"'07' matches none of the notebooks here \(00_welcome, 03_attention\)"):
        find_notebook(names, "07")
    with pytest.raises(ValueError, match="several"):
        find_notebook(["03_a.ipynb", "03_b.ipynb"], "03")


def test_cli_diffs_the_students_copy_against_the_version_waiting_beside_it(tmp_path, capsys):
    course, mine = tmp_path / "course", tmp_path / "mine"
    course.mkdir()
    nbformat.write(_nb("md:Add one.", "def add_one(x):\n    # BEGIN SOLUTION\n    return x + 1\n    # END SOLUTION"),
                   str(course / "00_a.ipynb"))
    update_workspace(course, mine)
    assert main(["diff", "00", "--folder", str(mine)]) == 0
    assert "No new version of 00_a.ipynb is waiting" in capsys.readouterr().out
    student = nbformat.read(str(mine / "00_a.ipynb"), as_version=4)
    student.cells[0].source = "Add one. My note."
    nbformat.write(student, str(mine / "00_a.ipynb"))
    nbformat.write(_nb("md:Add one, explained.", "def add_one(x):\n    # BEGIN SOLUTION\n    return x + 1\n"
                       "    # END SOLUTION"), str(course / "00_a.ipynb"))
    update_workspace(course, mine)
    assert main(["diff", "00_a", "--folder", str(mine)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        f"--- {mine / '00_a.ipynb'} (yours)",
        f"+++ {mine / '00_a.updated.ipynb'} (the course's new version)",
    ]
    assert out[2:] == ["cell 1 (markdown) differs:", "@@ -1 +1 @@", "-Add one. My note.", "+Add one, explained."]
    assert main(["diff", "05", "--folder", str(mine)]) == 2
    assert "matches none" in capsys.readouterr().err
