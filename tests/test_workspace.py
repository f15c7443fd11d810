"""The student's own copy (``course-lab update``, run by ``make lab``): made once, then only added to;
a student's notebook is never overwritten, whatever the course does."""

from __future__ import annotations

import nbformat
import pytest

from course_utils.lab.cli import main
from course_utils.lab.release.workspace import update_workspace


def _course_notebook(path, body="    return x + 1", text="Add one."):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(text),
        nbformat.v4.new_code_cell(f"def add_one(x):\n    # BEGIN SOLUTION\n{body}\n    # END SOLUTION"),
    ]
    nbformat.write(nb, str(path))


@pytest.fixture
def course(tmp_path):
    source = tmp_path / "course"
    source.mkdir()
    _course_notebook(source / "00_a.ipynb")
    _course_notebook(source / "01_b.ipynb")
    return source


def _edit(path, note):
    nb = nbformat.read(str(path), as_version=4)
    nb.cells[1].source = f"def add_one(x):\n    return x + 1  # {note}"
    nbformat.write(nb, str(path))


def test_first_use_writes_student_versions(course, tmp_path):
    report = update_workspace(course, tmp_path / "mine")
    assert report.added == ["00_a.ipynb", "01_b.ipynb"] and not report.kept and not report.updated_beside
    text = (tmp_path / "mine/00_a.ipynb").read_text()
    assert "NotImplementedError" in text and "return x + 1" not in text
    assert "Made your copy of the course" in report.lines()[0]


def test_student_work_survives_and_new_notebooks_are_added(course, tmp_path):
    mine = tmp_path / "mine"
    update_workspace(course, mine)
    _edit(mine / "00_a.ipynb", "my answer")
    (mine / "01_b.ipynb").unlink()  # a student who deleted a notebook gets it back
    _course_notebook(course / "02_c.ipynb")
    report = update_workspace(course, mine)
    assert report.kept == ["00_a.ipynb"] and report.added == ["01_b.ipynb", "02_c.ipynb"]
    assert "my answer" in (mine / "00_a.ipynb").read_text()
    assert update_workspace(course, mine).lines() == [f"Your copy of the course in {mine} is up to date (3 notebooks)."]


def test_a_changed_course_notebook_goes_beside_the_students(course, tmp_path):
    mine = tmp_path / "mine"
    update_workspace(course, mine)
    _edit(mine / "00_a.ipynb", "my answer")
    _course_notebook(course / "00_a.ipynb", text="Add one, now with a better explanation.")
    report = update_workspace(course, mine)
    assert report.updated_beside == [("00_a.ipynb", "00_a.updated.ipynb")] and report.kept == ["01_b.ipynb"]
    assert "my answer" in (mine / "00_a.ipynb").read_text()
    assert "better explanation" in (mine / "00_a.updated.ipynb").read_text()
    assert "left as it is" in " ".join(report.lines()) and "course-lab diff 00" in " ".join(report.lines())
    # nothing new is written next time, but the student is told again while the new version waits
    again = update_workspace(course, mine)
    assert again.updated_beside == [] and again.waiting == [("00_a.ipynb", "00_a.updated.ipynb")]
    assert "Still waiting beside your 00_a.ipynb" in " ".join(again.lines()) and "up to date" not in again.lines()[-1]
    # a second change replaces our .updated file while the student has not touched it ...
    _course_notebook(course / "00_a.ipynb", text="Add one, third version.")
    assert update_workspace(course, mine).updated_beside == [("00_a.ipynb", "00_a.updated.ipynb")]
    assert "third version" in (mine / "00_a.updated.ipynb").read_text()
    # ... and never once they have worked in it
    _edit(mine / "00_a.updated.ipynb", "work in the new version")
    _course_notebook(course / "00_a.ipynb", text="Add one, fourth version.")
    assert update_workspace(course, mine).updated_beside == [("00_a.ipynb", "00_a.updated-2.ipynb")]
    assert "work in the new version" in (mine / "00_a.updated.ipynb").read_text()
    assert "my answer" in (mine / "00_a.ipynb").read_text()


def test_a_notebook_that_cannot_be_released_writes_nothing(course, tmp_path):
    (course / "03_bad.ipynb").write_text("{not json")
    assert main(["update", "--source", str(course), "--folder", str(tmp_path / "mine")]) == 2
    assert not (tmp_path / "mine").exists()


def test_the_folder_must_not_be_the_course(course):
    with pytest.raises(ValueError, match="folder must differ"):
        update_workspace(course, course)


def test_cli_reports_what_it_did(course, tmp_path, capsys):
    assert main(["update", "--source", str(course), "--folder", str(tmp_path / "mine")]) == 0
    assert "2 notebooks" in capsys.readouterr().out


def test_a_notebook_the_student_never_changed_is_refreshed_in_place(course, tmp_path):
    mine = tmp_path / "mine"
    update_workspace(course, mine)
    _edit(mine / "01_b.ipynb", "my answer")
    nb = nbformat.read(str(mine / "00_a.ipynb"), as_version=4)  # opened and run, never edited:
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="ran it")]  # outputs and metadata differ
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, str(mine / "00_a.ipynb"))
    for name in ("00_a.ipynb", "01_b.ipynb"):
        _course_notebook(course / name, text="Add one, now with a better explanation.")
    report = update_workspace(course, mine)
    assert report.refreshed == ["00_a.ipynb"] and report.updated_beside == [("01_b.ipynb", "01_b.updated.ipynb")]
    assert "better explanation" in (mine / "00_a.ipynb").read_text() and not (mine / "00_a.updated.ipynb").exists()
    assert "my answer" in (mine / "01_b.ipynb").read_text()
    assert "Brought up to date (you had not changed them): 00_a.ipynb" in report.lines()


def test_a_manifest_from_before_the_cell_hashes_still_protects_the_student(course, tmp_path):
    import json

    from course_utils.lab.release.workspace import MANIFEST

    mine = tmp_path / "mine"
    update_workspace(course, mine)
    manifest = json.loads((mine / MANIFEST).read_text())
    (mine / MANIFEST).write_text(json.dumps({k: v["text"] for k, v in manifest.items()}))  # the old format
    nb = nbformat.read(str(mine / "00_a.ipynb"), as_version=4)
    nb.metadata["language_info"] = {"name": "python"}  # saved, cells unchanged: unknown to an old manifest
    nbformat.write(nb, str(mine / "00_a.ipynb"))
    for name in ("00_a.ipynb", "01_b.ipynb"):
        _course_notebook(course / name, text="Add one, second version.")
    report = update_workspace(course, mine)
    assert report.refreshed == ["01_b.ipynb"] and report.updated_beside == [("00_a.ipynb", "00_a.updated.ipynb")]


def test_a_split_notebook_names_its_replacements_and_stays_as_the_student_left_it(course, tmp_path):
    """Issue #40: the old 09 became 09, 10 and 11 (and 10, 11 became 12, 13); a student who has the old one
    keeps it untouched, gets the new ones, and is told on every run which notebooks replaced it."""
    mine = tmp_path / "mine"
    _course_notebook(course / "02_old.ipynb")
    update_workspace(course, mine)
    _edit(mine / "02_old.ipynb", "my answer")
    before = (mine / "02_old.ipynb").read_bytes()
    (course / "02_old.ipynb").unlink()
    for name in ("02_first.ipynb", "03_second.ipynb"):
        _course_notebook(course / name)
    retired = {"02_old.ipynb": ("02_first.ipynb", "03_second.ipynb"), "07_gone.ipynb": ("08_new.ipynb",)}
    report = update_workspace(course, mine, retired=retired)
    assert report.added == ["02_first.ipynb", "03_second.ipynb"]
    assert report.retired == [("02_old.ipynb", ("02_first.ipynb", "03_second.ipynb"))]  # 07_gone: they never had it
    assert (mine / "02_old.ipynb").read_bytes() == before
    message = ("The course split into 02_first.ipynb and 03_second.ipynb: your 02_old.ipynb is the old version, "
               "left as it is. Copy your answers from it into the new notebooks, then delete 02_old.ipynb.")
    assert message in report.lines()
    again = update_workspace(course, mine, retired=retired).lines()
    assert message in again and not any("up to date" in line for line in again)
    (mine / "02_old.ipynb").unlink()
    assert update_workspace(course, mine, retired=retired).lines() == [
        f"Your copy of the course in {mine} is up to date (4 notebooks)."]


def test_the_course_retires_only_notebooks_it_no_longer_has_and_every_replacement_exists():
    from pathlib import Path

    from course_utils.lab.release.workspace import RETIRED

    course = {p.name for p in (Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert RETIRED and not set(RETIRED) & course
    assert all(set(new) <= course for new in RETIRED.values()), RETIRED
