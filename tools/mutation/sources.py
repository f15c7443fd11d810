"""Where each exercise's solution lives in the notebook sources, and a namespace to run it in.

The code a student writes is the solution region (``# BEGIN SOLUTION`` .. ``# END SOLUTION``) of the
top-level function or class the exercise names, in ``notebooks/src/NN_<notebook>.py``. ``Solution``
holds that definition's source (decorators to its last line), the lines of its regions (the only
lines mutated) and a digest, so a committed mutant list can tell when the solution changed.

``namespace(notebook)`` runs the notebook source's top-level imports, ``def``/``class`` statements and
literal assignments, nothing else (no cell's computation: ``env.sibling.run_definitions``), which is what
a solution function needs to run.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from course_utils.checks import all_exercises, check_modules, exercise_modules
from course_utils.env.sibling import run_definitions
from course_utils.lab.release.solutions import BEGIN, END

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "notebooks" / "src"


@dataclass(frozen=True)
class Solution:
    """One exercise's solution definition: ``source`` starts at its first line (``first_line`` in the notebook)."""

    exercise: str
    notebook: str  # the checks package, e.g. "welcome"
    path: Path
    name: str
    source: str
    first_line: int
    regions: tuple[tuple[int, int], ...]  # (first, last) line of each region's code, relative to ``source``

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def in_region(self, node: ast.AST) -> bool:
        start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        return start is not None and any(a <= start and end <= b for a, b in self.regions)


def notebook_source(notebook: str) -> Path:
    """``'welcome'`` -> ``notebooks/src/00_welcome.py``."""
    found = sorted(SOURCES.glob(f"[0-9][0-9]_{notebook}.py"))
    if len(found) != 1:
        raise FileNotFoundError(f"expected one notebooks/src/NN_{notebook}.py, found {found}")
    return found[0]


def exercise_notebooks() -> dict[str, str]:
    """Exercise name -> its checks package (= its notebook), for every registered exercise."""
    import importlib

    owners = {}
    for notebook in check_modules():
        for module_name in exercise_modules(notebook):
            for name in getattr(importlib.import_module(module_name), "EXERCISES", {}):
                owners[name] = notebook
    return owners


def _regions(lines: list[str], start: int, end: int) -> tuple[tuple[int, int], ...]:
    """Code lines of each region, relative to ``start``; the last ``# END SOLUTION`` may follow ``end``."""
    regions, opened, number = [], None, start - 1
    while number < len(lines) and (number < end or opened is not None):
        number += 1
        line = lines[number - 1]
        if BEGIN.match(line):
            opened = number + 1
        elif END.match(line) and opened is not None:
            regions.append((opened - start + 1, number - 1 - start + 1))
            opened = None
    return tuple(regions)


def solution(exercise: str, notebook: str | None = None) -> Solution:
    """The solution definition of ``exercise`` (the top-level def/class named like its function)."""
    notebook = notebook or exercise_notebooks()[exercise]
    name = all_exercises()[exercise].expected_name
    path = notebook_source(notebook)
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            regions = _regions(lines, start, node.end_lineno)
            if regions:
                found.append((start, node.end_lineno, regions))
    if len(found) != 1:
        raise LookupError(f"{path.name}: expected one top-level `{name}` with a solution region, found {len(found)}")
    start, end, regions = found[0]
    source = "\n".join(lines[start - 1 : end]) + "\n"
    return Solution(exercise, notebook, path, name, source, start, regions)


@functools.lru_cache(maxsize=None)
def _base_namespace(notebook: str) -> tuple[tuple[str, object], ...]:
    namespace: dict = {"__name__": f"mutants_{notebook}"}
    # a definition that needs a cell's computation fails and is skipped: not one a solution uses
    run_definitions(notebook_source(notebook).read_text(), namespace, f"<{notebook}>")
    return tuple(namespace.items())


def namespace(notebook: str) -> dict:
    """A fresh copy of the notebook's imports and top-level definitions (no cell is run)."""
    return dict(_base_namespace(notebook))
