"""The concept packages' re-exports: each name a package offers is its submodule's object, no name
hides a submodule, and importing a package loads none of its modules (nor torch) until a name is used."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "course_utils"
PACKAGES = ["tokenisation", "attention", "counting", "env", "gpt", "llama", "moe", "superposition", "interp"]


def _submodules(package: str) -> set[str]:
    return {p.stem for p in (ROOT / package).glob("*.py") if p.stem != "__init__"}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_is_the_submodules_own_object(package):
    module = importlib.import_module(f"course_utils.{package}")
    attach = module.__getattr__.__closure__  # lazy_loader keeps the name -> submodule map in its closure
    mapping = next(c.cell_contents for c in attach if isinstance(c.cell_contents, dict) and c.cell_contents)
    assert set(module.__all__) == set(mapping), "__all__ lists what the package exports"
    hidden = sorted(set(mapping) & _submodules(package))
    assert not hidden, f"these names would hide a submodule of course_utils.{package}: {hidden}"
    for name, submodule in mapping.items():
        owner = importlib.import_module(f"course_utils.{package}.{submodule}")
        assert getattr(module, name) is getattr(owner, name), f"{package}.{name} is not {submodule}.{name}"
    assert set(_submodules(package)) <= set(mapping.values()) | {"kv_cache_fused"}, "a module exports nothing"


def test_importing_a_package_loads_nothing_until_a_name_is_used():
    code = ("import sys; import course_utils.gpt, course_utils.moe, course_utils.env, course_utils.llama, "
            "course_utils.interp; "
            "print(sorted(m for m in sys.modules if m.startswith('course_utils.') or m == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ("['course_utils.env', 'course_utils.gpt', 'course_utils.interp', 'course_utils.llama', "
                           "'course_utils.moe']"), out
