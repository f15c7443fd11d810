"""The environment `make lab` builds, as the tests reach it: `make test` builds it again beside .venv
(`make lab-env`: `make setup VENV=.venv-lab`, no test extras) and names it in ``COURSE_LAB_ENV``.

``lab_python()`` is its interpreter (the test skips where it was not built, and fails where
``COURSE_LAB_ENV`` names a folder without one); ``run_in_lab_env(path)`` executes a notebook top to
bottom with a kernel of that interpreter and returns the first error as one line naming the notebook,
the cell (counted from 1, with its first line) and the exception, e.g.
``05_multihead_attention.ipynb: cell 31 (from transformers import GPT2Config) raised ModuleNotFoundError: No
module named 'transformers'``, or ``None`` when every cell ran.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from nbclient.exceptions import CellExecutionError

from course_utils.notebook_run import CourseNotebookClient, SlicedKernelManager

ROOT = Path(__file__).resolve().parents[1]
KERNEL_NAME = "course-lab-env"
CELL_TIMEOUT_S = 900  # generous: 09's training cell on a loaded 2-core machine took minutes


def lab_env() -> Path:
    """The folder of the lab environment (``COURSE_LAB_ENV``, else ``.venv-lab``)."""
    return ROOT / os.environ.get("COURSE_LAB_ENV", ".venv-lab")


def lab_python() -> Path:
    python = lab_env() / "bin" / "python"
    if python.exists():
        return python
    if "COURSE_LAB_ENV" in os.environ:
        pytest.fail(f"COURSE_LAB_ENV={os.environ['COURSE_LAB_ENV']} has no bin/python: `make lab-env` builds it")
    pytest.skip("no .venv-lab here: `make lab-env` builds the environment `make lab` builds (`make test` does)")


class _LabEnvSpecs(KernelSpecManager):
    """One kernel spec: ipykernel started by the lab environment's interpreter."""

    def find_kernel_specs(self) -> dict[str, str]:
        return {KERNEL_NAME: ""}

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(argv=[str(lab_python()), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                          display_name="the lab environment", language="python")


def _first_line(source: str) -> str:
    lines = [line.strip() for line in source.splitlines() if line.strip() and not line.startswith("#")]
    return (lines or [""])[0][:80]


def run_in_lab_env(path: Path, cwd: Path | None = None) -> str | None:
    """Run every cell of the notebook at ``path`` (in ``cwd``, default its folder) in the lab environment;
    the first error as one line, or ``None``."""
    lab_python()  # skips (or fails) here, in the test's own thread, where the environment is missing
    nb = nbformat.read(str(path), as_version=4)
    km = SlicedKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=_LabEnvSpecs())
    client = CourseNotebookClient(nb, km=km, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT_S,
                                  resources={"metadata": {"path": str(cwd or path.parent)}})
    try:
        with ThreadPoolExecutor(1) as pool:  # a thread of its own: beside the browser tests, Playwright keeps an
            pool.submit(client.execute).result()  # event loop running in this worker's main thread
    except CellExecutionError as error:
        for number, cell in enumerate(nb.cells, start=1):
            if any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
                return f"{path.name}: cell {number} ({_first_line(cell.source)}) raised {error.ename}: {error.evalue}"
        return f"{path.name}: {error.ename}: {error.evalue}"
    return None
