"""Graded checks: one module per notebook, plus the shared machinery in ``core`` and ``compare``.

Each notebook module defines ``EXERCISES`` (a dict name -> ``Exercise``) and a ``check_<name>``
function per exercise for use in the notebook. ``get_exercise(name)`` finds any of them, which is
how the grader and the tests reach every check without a hand-kept list.
"""

from __future__ import annotations

import importlib
import pkgutil

from course_utils.checks.core import Case, Exercise, Mistake, Property, Verdict

__all__ = ["Case", "Exercise", "Mistake", "Property", "Verdict", "all_exercises", "get_exercise", "check_modules"]

_MACHINERY = {"core", "compare"}


def check_modules() -> list[str]:
    """Names of the per-notebook check modules, e.g. ``['welcome', 'tokenisation', ...]``."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in _MACHINERY and not m.name.startswith("_"))


def all_exercises() -> dict[str, Exercise]:
    """Every exercise of every notebook, by name. Names are unique across the course."""
    found: dict[str, Exercise] = {}
    for module_name in check_modules():
        module = importlib.import_module(f"{__name__}.{module_name}")
        for name, exercise in getattr(module, "EXERCISES", {}).items():
            if name in found:
                raise RuntimeError(f"exercise name {name!r} is defined twice (second time in checks.{module_name})")
            found[name] = exercise
    return found


def get_exercise(name: str) -> Exercise:
    """The exercise called ``name``; ``KeyError`` listing the known names if there is none."""
    exercises = all_exercises()
    if name not in exercises:
        raise KeyError(f"no exercise named {name!r}; known: {', '.join(sorted(exercises))}")
    return exercises[name]
