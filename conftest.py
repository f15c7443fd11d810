"""Shared test configuration: GPU skipping, and a per-notebook execution-time report."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
NOTEBOOK_DIR = ROOT / "notebooks"
_notebook_seconds: dict[str, float] = defaultdict(float)


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU; none on this machine")
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _notebook_seconds:
        return
    terminalreporter.section("notebook execution time (target: under 60 s each on 2 CPU cores)")
    for path, seconds in sorted(_notebook_seconds.items()):
        flag = "" if seconds < 60 else "   <-- over the one-minute target"
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}{flag}")
