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
    terminalreporter.section("notebook execution time (target: under 60 s each on 2 CPU cores unless the notebook says)")
    for path, seconds in sorted(_notebook_seconds.items()):
        target = _time_target(ROOT / path)
        flag = "" if seconds < target else f"   <-- over its {target:.0f} s target"
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}{flag}")


def _time_target(path: Path) -> float:
    """A notebook's time budget: ``metadata.course.time_target_s`` (09 trains a model: 210 s), else 60 s."""
    import json

    try:
        return float(json.loads(path.read_text())["metadata"].get("course", {}).get("time_target_s", 60))
    except (OSError, ValueError, KeyError):
        return 60.0
