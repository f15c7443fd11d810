"""Every solution notebook runs top to bottom in the environment `make lab` builds, and every stored output
it compares is the same there on another numerics path: AVX2 where the CPU has AVX-512, else the lowest
(``numerics.other_paths``; the claim tests take the lowest, tests/test_numerics_matrix.py) (issue 42: notebook 05 imported `transformers`, a
test-only package, and stopped there for every student, while nbval ran it in the test environment and
passed; issue 36: the stored outputs must not depend on the SIMD path). `make test` builds that environment
beside .venv (`make lab-env`, tests/lab_env.py); each notebook here is its own test, so the pytest-xdist
workers share them out, and the main nbval run covers the native path."""

from __future__ import annotations

import json
import subprocess

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lab_env import lab_python, nbval_in_lab_env
from numerics import other_paths
from notebook_tools import course_notebooks

TEST_ONLY = ("pytest", "nbval", "jupytext", "transformers", "tokenizers", "playwright", "jupyterhub")


@pytest.fixture(scope="module")
def notebook_path():
    path = other_paths()["notebooks"]
    if path is None:
        pytest.skip("this CPU's native path is its only one")
    return path


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
    report = nbval_in_lab_env(path)
    assert report.startswith("planted.ipynb: ") and "Cell 1" in report, report  # nbval counts code cells from 0
    assert "ModuleNotFoundError: No module named 'transformers'" in report, report


@pytest.mark.slow
def test_the_kernel_computes_on_the_lowest_path_and_a_differing_output_fails(tmp_path):
    """The kernel really runs on the lowest path (torch says so), and a stored output the run does not
    reproduce fails the notebook: here the capability this CPU's native path reports."""
    path = tmp_path / "capability.ipynb"
    cell = new_code_cell("import torch\nprint(torch.backends.cpu.get_cpu_capability())", execution_count=1)
    nb = new_notebook(cells=[cell])
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="DEFAULT\n")]
    nbformat.write(nb, str(path))
    assert nbval_in_lab_env(path) is None
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="AVX512\n")]
    nbformat.write(nb, str(path))
    assert "Cell 0" in nbval_in_lab_env(path)


@pytest.mark.slow
@pytest.mark.timeout(2700)
@pytest.mark.parametrize("notebook", [p.name for p in course_notebooks()])
def test_the_solution_notebook_runs_and_matches_in_the_lab_env_on_another_numerics_path(notebook, notebook_path):
    path = next(p for p in course_notebooks() if p.name == notebook)
    report = nbval_in_lab_env(path, notebook_path)
    assert report is None, report
