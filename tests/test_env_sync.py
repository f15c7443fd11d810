"""environment.yml (conda) and pyproject.toml (pip) must name the same dependencies, with the
same version bounds, and the data packages must be pinned in requirements-data.txt."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _normalise(requirement: str) -> tuple[str, str]:
    match = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*([^;]*)(;.*)?$", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower(), match.group(3).replace(" ", "") + (match.group(4) or "").replace(" ", "").replace('"', "'")


def _pyproject() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["test"]
    return dict(map(_normalise, requirements))


def _environment_yml() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return dict(map(_normalise, pip_section))


def test_same_dependencies_and_bounds():
    assert _environment_yml() == _pyproject()


def test_environment_yml_python_matches_requires_python():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert f"python{requires}" in env["dependencies"]


def test_data_packages_are_pinned():
    lines = [l.split("#")[0].strip() for l in (ROOT / "requirements-data.txt").read_text().splitlines()]
    pins = [l for l in lines if l]
    assert pins and all("==" in l for l in pins)
