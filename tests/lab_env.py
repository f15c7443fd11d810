"""The environment `make lab` builds, as the tests reach it: `make test` builds it again beside .venv
(`make lab-env`: `make setup VENV=.venv-lab`, no test extras) and names it in ``COURSE_LAB_ENV``.

``lab_python()`` is its interpreter (the test skips where it was not built, and fails where
``COURSE_LAB_ENV`` names a folder without one). ``nbval_in_lab_env(path)`` runs nbval over a notebook
with a kernel of that interpreter on a numerics path it is given (tests/numerics.py; the lowest by
default: ``ATEN_CPU_CAPABILITY=default``, MKL at SSE4.2, oneDNN at SSE4.1), so one pass shows both that
every cell runs without the test extras (issue 42) and that every compared output is the same on that SIMD
path as the main nbval run found it on this CPU's own (issue 36). It returns ``None`` when nbval passes, else the failed
cells and the first exception, e.g. ``05_multihead_attention.ipynb::Cell 24 failed ... ModuleNotFoundError:
No module named 'transformers'``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from numerics import PATHS

ROOT = Path(__file__).resolve().parents[1]
KERNEL_NAME = "course-lab-env"
CELL_TIMEOUT_S = 900  # generous: 09's training cell on a loaded 2-core machine took minutes
XDIST = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")


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


def _kernel_spec(folder: Path, numerics: str) -> None:
    """A kernel spec in ``folder/kernels/``: ipykernel on the lab environment's interpreter, on ``numerics``."""
    spec = folder / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(lab_python()), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"the lab environment, {numerics} numerics path", "language": "python",
        "env": PATHS[numerics],
    }))


def nbval_in_lab_env(path: Path, numerics: str = "lowest") -> str | None:
    """nbval over the notebook at ``path`` in the lab environment on numerics path ``numerics``: ``None`` when
    every cell ran and matched its stored output, else the failed cells and the first exception."""
    with tempfile.TemporaryDirectory() as tmp:
        _kernel_spec(Path(tmp), numerics)
        env = {k: v for k, v in os.environ.items() if k not in XDIST}
        env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [tmp, os.environ.get("JUPYTER_PATH")]))
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q", "-rf",
                   "--rootdir", str(ROOT), "--nbval", "--nbval-kernel-name", KERNEL_NAME,
                   "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg"),
                   "--nbval-cell-timeout", str(CELL_TIMEOUT_S), str(path)]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3 * CELL_TIMEOUT_S)
    if done.returncode == 0:
        return None
    output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)  # nbval colours its report
    failed = [line for line in output.splitlines() if line.startswith("FAILED")]
    raised = [line.strip() for line in output.splitlines() if re.match(r"\s*\w+(Error|Exception): ", line)]
    first = re.search(r"_{3,} .*?Cell \d+ _{3,}\n(.*?)(?=\n_{3,} |\n={3,} )", output, re.S)  # nbval's own report
    detail = first.group(1)[:2500] if first else output[-3000:]
    return f"{path.name}: " + "\n".join(failed + raised[:1]) + "\n" + detail
