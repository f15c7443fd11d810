"""`course-lab export` and `course-lab release` never delete or overwrite what they did not write: a
planted nbgrader course and a planted student copy come through byte for byte (``owned_files.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from course_utils.lab.cli import main
from course_utils.lab.release.export import config_note, export
from course_utils.lab.release.owned_files import EXPORT_MARKER, RELEASE_MARKER, NotOursError, write_owned
from course_utils.lab.release.release import ReleaseError, release
from course_utils.lab.release.workspace import update_workspace
from notebook_tools import NOTEBOOK_DIR

WELCOME = NOTEBOOK_DIR / "00_welcome.ipynb"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _plant(folder: Path, files: dict[str, bytes]) -> dict[str, bytes]:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return _snapshot(folder)


@pytest.fixture
def nbgrader_course(tmp_path) -> tuple[Path, dict[str, bytes]]:
    """An instructor's nbgrader course in use: gradebook, submissions, grades, another assignment, own config."""
    course = tmp_path / "course"
    planted = _plant(course, {
        "gradebook.db": bytes(range(256)) * 4,
        "nbgrader_config.py": b'c = get_config()\nc.CourseDirectory.course_id = "tf101"\n',
        "source/quiz1/quiz1.ipynb": b'{"cells": [], "note": "the instructor\'s own assignment"}',
        "submitted/alice/00_welcome/00_welcome.ipynb": b'{"alice": "her answers"}',
        "autograded/alice/00_welcome/00_welcome.ipynb": b'{"alice": "graded"}',
        "feedback/alice/00_welcome/00_welcome.html": b"<p>well done</p>",
    })
    return course, planted


def test_export_into_an_nbgrader_course_adds_the_assignment_and_keeps_everything(nbgrader_course):
    course, planted = nbgrader_course
    written = export(WELCOME, course, "nbgrader")
    assert written == [course / "source/00_welcome/00_welcome.ipynb"]
    after = _snapshot(course)
    assert {rel: after[rel] for rel in planted} == planted  # byte for byte, the config included
    assert set(after) - set(planted) == {"source/00_welcome/00_welcome.ipynb", EXPORT_MARKER}
    assert "timeout = 300" in config_note(course)
    # exporting again (an updated course) rewrites the export's own notebook, and only it
    export(WELCOME, course, "nbgrader")
    assert {rel: _snapshot(course)[rel] for rel in planted} == planted


def test_an_assignment_the_export_did_not_write_is_refused(nbgrader_course, capsys):
    course, _ = nbgrader_course
    mine = _plant(course, {"source/00_welcome/00_welcome.ipynb": b'{"instructor": "my own version"}'})
    code = main(["export", "--to", "nbgrader", "--source", str(WELCOME), "--out", str(course)])
    err = capsys.readouterr().err
    assert code == 2 and f"{course / 'source/00_welcome'} already exists" in err and "nothing was written" in err
    assert _snapshot(course) == mine


@pytest.mark.parametrize("to", ["nbgrader", "otter"])
def test_a_non_empty_folder_that_is_no_export_is_refused(tmp_path, to, capsys):
    folder = tmp_path / "thesis"
    planted = _plant(folder, {"chapter1.tex": b"\\section{Intro}", "data/results.csv": b"1,2\n"})
    assert main(["export", "--to", to, "--source", str(WELCOME), "--out", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder} is not empty and was not written by `course-lab export --to {to}`" in err
    assert "chapter1.tex" in err and "Choose a new or empty folder" in err
    assert _snapshot(folder) == planted


def test_re_exporting_keeps_other_files_and_refuses_an_edited_one(tmp_path):
    out = tmp_path / "otter"
    export(WELCOME, out, "otter")
    master = out / "00_welcome/00_welcome.ipynb"
    extra = _plant(out, {"00_welcome/dist/student/00_welcome.ipynb": b"{}", "notes.md": b"mine"})
    export(WELCOME, out, "otter")  # a previous export: fine, and what otter assign made survives
    after = _snapshot(out)
    assert {rel: after[rel] for rel in ("00_welcome/dist/student/00_welcome.ipynb", "notes.md")} == {
        rel: extra[rel] for rel in ("00_welcome/dist/student/00_welcome.ipynb", "notes.md")}
    master.write_text(master.read_text().replace("ASSIGNMENT CONFIG", "ASSIGNMENT CONFIG\n# my tweak"))
    edited = _snapshot(out)
    with pytest.raises(ValueError, match="was changed since `course-lab export --to otter` wrote it"):
        export(WELCOME, out, "otter")
    assert _snapshot(out) == edited
    # an otter export is not an nbgrader one: the two never take each other's folder
    with pytest.raises(ValueError, match="not written by `course-lab export --to nbgrader`"):
        export(WELCOME, out, "nbgrader")


def test_release_refuses_a_students_copy_and_says_what_to_do(tmp_path, capsys):
    student = tmp_path / "notebooks" / "student"
    update_workspace(_course(tmp_path), student)
    nb = nbformat.read(str(student / "00_a.ipynb"), as_version=4)
    nb.cells[0].source += "\n\nmy notes for the exam"
    nbformat.write(nb, str(student / "00_a.ipynb"))
    planted = _snapshot(student)
    assert main(["release", "--source", str(_course(tmp_path)), "--out", str(student)]) == 2
    err = capsys.readouterr().err
    assert f"{student} is not empty and was not written by `course-lab release`" in err
    assert f"course-lab update --folder {student}" in err
    assert _snapshot(student) == planted


def _course(tmp_path: Path) -> Path:
    source = tmp_path / "course"
    if not source.exists():
        source.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_markdown_cell("Add one."),
            nbformat.v4.new_code_cell("def add_one(x):\n    # BEGIN SOLUTION\n    return x + 1\n    # END SOLUTION"),
        ]
        nbformat.write(nb, str(source / "00_a.ipynb"))
    return source


def test_re_release_updates_its_own_notebooks_and_never_one_worked_in(tmp_path):
    out, source = tmp_path / "out", _course(tmp_path)
    release(source, out)
    assert json.loads((out / RELEASE_MARKER).read_text())["kind"] == "release"
    extra = _plant(out, {"README.txt": b"for the TA"})["README.txt"]
    nb = nbformat.read(str(source / "00_a.ipynb"), as_version=4)
    nb.cells[0].source = "Add one, explained better."
    nbformat.write(nb, str(source / "00_a.ipynb"))
    release(source, out)
    assert "explained better" in (out / "00_a.ipynb").read_text() and (out / "README.txt").read_bytes() == extra
    (out / "00_a.ipynb").write_text((out / "00_a.ipynb").read_text().replace("Add one", "My answer: add one"))
    worked_in = _snapshot(out)
    with pytest.raises(ReleaseError, match="00_a.ipynb was changed since `course-lab release` wrote it"):
        release(source, out)
    assert _snapshot(out) == worked_in


def test_write_owned_refuses_paths_outside_the_folder_and_links(tmp_path):
    with pytest.raises(ValueError, match="paths inside the folder"):
        write_owned(tmp_path / "a", {"../escape.txt": b"x"}, marker=RELEASE_MARKER, command="release")
    with pytest.raises(ValueError, match="non-empty dict"):
        write_owned(tmp_path / "a", {}, marker=RELEASE_MARKER, command="release")
    folder = tmp_path / "b"
    write_owned(folder, {"x.txt": b"1"}, marker=RELEASE_MARKER, command="release")
    (folder / "x.txt").unlink()
    (folder / "x.txt").symlink_to(tmp_path / "elsewhere.txt")
    with pytest.raises(NotOursError, match="is a link or a folder"):
        write_owned(folder, {"x.txt": b"2"}, marker=RELEASE_MARKER, command="release")
    assert not (tmp_path / "elsewhere.txt").exists()
