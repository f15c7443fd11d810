"""Instructor test modules passed with ``course-lab grade --hidden-tests DIR``.

Every ``*.py`` file in DIR is loaded in the grader process (never in a student's kernel) and may
define either or both of:

- ``EXERCISES = {"stable_softmax": Exercise(...)}`` -- more cases for an exercise, judged exactly
  like the course's checks (the ``Exercise``'s own ``reference``, ``compare`` and ``mistakes``);
- test functions ``def test_stable_softmax(student): ...`` (or ``test_stable_softmax__big_rows``)
  that receive a proxy: ``student(x)`` calls the student's function in their kernel and returns
  the plain value (tensors, numbers, containers); a failing ``assert`` fails the exercise with the
  assertion's message. If the student's function raises, ``student(x)`` raises ``StudentRaised``.

Example file::

    import torch
    def test_stable_softmax__rows_sum_to_one(student):
        out = student(torch.randn(4, 9, dtype=torch.float64))
        assert torch.allclose(out.sum(-1), torch.ones(4, dtype=torch.float64)), "rows must sum to 1"

Leaves out: running them (``grade.py``).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from course_utils.checks.core import Exercise


@dataclass
class HiddenTests:
    """Extra exercises and test functions by exercise name, with the file each came from."""

    exercises: dict[str, list[tuple[Exercise, str]]] = field(default_factory=dict)
    functions: dict[str, list[Callable]] = field(default_factory=dict)

    def for_exercise(self, name: str) -> tuple[list[tuple[Exercise, str]], list[Callable]]:
        return self.exercises.get(name, []), self.functions.get(name, [])


def _exercise_for_test(func_name: str, known: set[str]) -> str | None:
    rest = func_name[len("test_") :]
    for name in sorted(known, key=len, reverse=True):
        if rest == name or rest.startswith(name + "__"):
            return name
    return None


def load_hidden_tests(folder: Path | None, known_exercises: set[str]) -> HiddenTests:
    """Load every ``*.py`` in ``folder``; ``ValueError`` naming the file for a broken or unknown test."""
    tests = HiddenTests()
    if folder is None:
        return tests
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"hidden_tests must be a folder of .py files, got {folder}")
    for number, path in enumerate(sorted(folder.glob("*.py"))):
        spec = importlib.util.spec_from_file_location(f"_course_lab_hidden_{number}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise ValueError(f"{path}: could not load ({type(exc).__name__}: {exc})") from exc
        for name, exercise in getattr(module, "EXERCISES", {}).items():
            if name not in known_exercises:
                raise ValueError(f"{path}: EXERCISES names {name!r}, which is not a course exercise")
            if not isinstance(exercise, Exercise):
                raise ValueError(f"{path}: EXERCISES[{name!r}] must be an Exercise, got {type(exercise).__name__}")
            tests.exercises.setdefault(name, []).append((exercise, str(path)))
        for attr in sorted(vars(module)):
            func = getattr(module, attr)
            if attr.startswith("test_") and callable(func):
                target = _exercise_for_test(attr, known_exercises)
                if target is None:
                    raise ValueError(
                        f"{path}: {attr} does not name a course exercise (test_<exercise> or test_<exercise>__<what>)"
                    )
                tests.functions.setdefault(target, []).append(func)
    return tests
