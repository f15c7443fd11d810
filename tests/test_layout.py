"""The layout CONTRIBUTING.md promises: checks and viz named after their notebook, and Core modules
that never pick a device themselves (they follow their inputs)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from notebook_tools import course_notebooks, read

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_utils"
NOT_CORE = {"device.py", "envcheck.py", "__init__.py"}  # they pick and describe devices
NOT_CORE_FOLDERS = {"checks", "viz", "lab"}


def _core_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if p.name not in NOT_CORE and not set(p.relative_to(PACKAGE).parts[:-1]) & NOT_CORE_FOLDERS)


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_never_imports_device(path):
    bad = {n for n in _imported_modules(path) if n in {"course_utils.device", "course_utils.envcheck"}}
    assert not bad, f"{path.name} imports {sorted(bad)}: Core follows its inputs' device instead of picking one"


def test_the_rule_sees_a_violation(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("from course_utils.device import pick_device\n")
    assert "course_utils.device" in _imported_modules(sample)


@pytest.mark.parametrize("path", course_notebooks(), ids=lambda p: p.name)
def test_checks_and_figures_are_named_after_their_notebook(path):
    name = re.sub(r"^\d+_", "", path.stem)
    source = "\n".join(c.source for c in read(path).cells if c.cell_type == "code")
    if read(path).metadata.get("course", {}).get("exercises"):
        assert (PACKAGE / "checks" / f"{name}.py").exists(), f"checks for {path.name} belong in checks/{name}.py"
        checks_used = set(re.findall(r"course_utils\.checks\.(\w+)", source)) - {name}
        assert not checks_used, f"{path.name} imports checks of another notebook: {sorted(checks_used)}"
