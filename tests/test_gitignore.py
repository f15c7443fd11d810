"""The project's .gitignore keeps an instructor's files out of git: a `git add -A` in a clone where
someone graded (docs/grading.md) must not commit students' hand-ins, grades or feedback."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

INSTRUCTOR_FILES = [
    "submissions/alice/00_welcome.ipynb",
    "submissions/bob.ipynb",
    "grades.csv",
    "grades_canvas.csv",
    "grades_week3.csv",
    "grades_feedback/alice.md",
    "grades_class_report.md",
    "grades_class_report.png",
    ".grades.csv.journal",
    ".course-lab-run-1234/job0.json",
    "notebooks/student/00_welcome.ipynb",
]
COURSE_FILES = ["notebooks/00_welcome.ipynb", "course_utils/lab/cli.py", "docs/grading.md", "tests/test_grade.py"]


def _ignored(paths: list[str]) -> set[str]:
    proc = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(paths) + "\n", capture_output=True, text=True,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: none of them is ignored
    return set(proc.stdout.split())


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_instructor_files_are_ignored_and_the_course_is_not():
    assert _ignored(INSTRUCTOR_FILES) == set(INSTRUCTOR_FILES)
    assert _ignored(COURSE_FILES) == set()
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True)
    assert _ignored(tracked.stdout.split()) == set()  # no pattern hides a file of the course
