"""Every solution notebook runs top to bottom in the environment `make lab` builds (issue 42: notebook
05 imported `transformers`, a test-only package, and stopped there for every student, while nbval ran it
in the test environment and passed). `make test` builds that environment beside .venv (`make lab-env`,
tests/lab_env.py); each notebook here is its own test, so the pytest-xdist workers share them out."""

from __future__ import annotations

import json
import subprocess

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lab_env import lab_python, run_in_lab_env
from notebook_tools import course_notebooks

TEST_ONLY = ("pytest", "nbval", "jupytext", "transformers", "tokenizers", "playwright", "jupyterhub")


@pytest.mark.slow
def test_the_lab_env_holds_venvs_torch_build_and_no_test_extras():
    probe = ("import importlib.util, json, torch; "
             f"print(json.dumps([torch.__version__, [m for m in {TEST_ONLY!r} if importlib.util.find_spec(m)]]))")
    found = subprocess.run([str(lab_python()), "-c", probe], capture_output=True, text=True, check=True)
    torch_version, test_only = json.loads(found.stdout)
    assert test_only == [], f"the lab environment holds test-only packages: {test_only}"
    import torch

    assert torch_version == torch.__version__, "the lab environment must hold .venv's torch build"


@pytest.mark.slow
def test_a_failing_cell_is_named_with_its_notebook_and_exception(tmp_path):
    path = tmp_path / "planted.ipynb"
    nb = new_notebook(cells=[new_code_cell("import torch, ipywidgets, course_utils"), new_markdown_cell("text"),
                             new_code_cell("# an oracle the course keeps for its tests\nimport transformers"),
                             new_code_cell("never = 'reached'")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    assert run_in_lab_env(path) == (
        "planted.ipynb: cell 3 (import transformers) raised ModuleNotFoundError: No module named 'transformers'")


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("notebook", [p.name for p in course_notebooks()])
def test_the_solution_notebook_runs_in_the_lab_env(notebook):
    path = next(p for p in course_notebooks() if p.name == notebook)
    error = run_in_lab_env(path)
    assert error is None, error

