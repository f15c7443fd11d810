"""Notebook 05 handed in solved and graded by the lab environment's `course-lab` (the grader's kernel runs
the grader's own interpreter, ``sys.executable``, so this is the environment `make lab` builds): every
exercise passes, and the student's feedback carries no import error (issue 42: every graded 05 said
``ModuleNotFoundError: No module named 'transformers'``). And notebook 11 handed in alone (issue #40): it reads
the student's parts from their notebook 09, which a submission of one notebook does not carry, so the course's
parts stand in and every exercise of its own still passes. In conftest.py's "grader" group: the grader's
tests look for leftover processes and cgroups machine-wide."""

from __future__ import annotations

import csv
import shutil
import subprocess

import pytest

from course_utils.lab.grading.sandbox import isolation_problem
from lab_env import lab_python
from notebook_tools import NOTEBOOK_DIR, read

@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("notebook", ["05_multihead_attention.ipynb", "11_generate_gpt.ipynb"])
def test_a_solved_notebook_graded_in_the_lab_env_passes_with_no_import_error(tmp_path, notebook):
    course_lab = lab_python().parent / "course-lab"
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    shutil.copy(NOTEBOOK_DIR / notebook, tmp_path / "subs" / "alice" / notebook)
    out = tmp_path / "out" / "grades.csv"
    args = [str(course_lab), "grade", str(tmp_path / "subs"), "--out", str(out), "--assignment", notebook[:-6],
            "--timeout", "600", "--quiet"]
    if isolation_problem() is not None:  # no bubblewrap here: the same interpreter, unsandboxed
        args.append("--no-sandbox")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=1100)
    assert proc.returncode == 0, proc.stderr[-2000:]

    feedback = "\n".join(p.read_text(encoding="utf-8") for p in out.with_name("grades_feedback").iterdir())
    for sign in ("ModuleNotFoundError", "ImportError", "No module named"):
        assert sign not in feedback, f"{notebook}'s feedback carries an import error:\n{feedback[:3000]}"
    rows = [r for r in csv.DictReader(out.open(encoding="utf-8")) if r["exercise"] != "TOTAL"]
    exercises = read(NOTEBOOK_DIR / notebook).metadata["course"]["exercises"]
    assert {r["exercise"]: (r["status"], float(r["points"])) for r in rows} == {
        name: ("ok", float(facts["points"])) for name, facts in exercises.items()}, feedback[:3000]
