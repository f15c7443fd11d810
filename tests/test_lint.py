"""The library stays clean under the project's ruff configuration (pyproject.toml [tool.ruff])."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    try:
        import ruff  # noqa: F401  (the PyPI package ships the binary)
    except ImportError:
        if shutil.which("ruff") is None:
            pytest.skip("ruff is not installed (it is in the [test] extra)")
        return ["ruff"]
    return [sys.executable, "-m", "ruff"]


def test_library_passes_ruff():
    result = subprocess.run([*_ruff(), "check", "--no-cache", "course_utils"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def test_ruff_reports_a_planted_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import os\nf = lambda x: x\n")
    result = subprocess.run([*_ruff(), "check", "--no-cache", "bad.py"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "F401" in result.stdout and "E731" in result.stdout
