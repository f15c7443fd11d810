"""Graded checks: a package per notebook, a file per exercise, plus the shared machinery
(``core``: the ``Exercise`` model and its verdicts; ``outcome``: what a student's call did, in one
line; ``compare``: how answers are compared; ``bank``: the decorators that keep each mistake
beside its hint; ``shared``: the worked example and properties several notebooks use; ``traps``: recording models that
show how a student's code ran them; ``weights``: loading seeded weights into a student's module, whichever
equivalent way it stores them).

``checks/<notebook>/<exercise>.py`` holds one exercise whole: its reference, cases, mistakes with
their hints, accepted alternatives and hint levels, its ``Exercise`` and its ``check_<name>``
function. Each file and each notebook package define ``EXERCISES`` (a dict name -> ``Exercise``);
the package re-exports the ``check_<name>`` functions the notebook imports. ``get_exercise(name)``
finds any exercise, which is how the grader and the tests reach every check without a hand-kept
list. ``hint(name, level)`` shows an exercise's hints one level at a time (a nudge first, never the
code).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil

from dataclasses import dataclass

from course_utils.checks.core import Alternative, Case, Exercise, Mistake, Property, Verdict

__all__ = [
    "Alternative",
    "Case",
    "Exercise",
    "Mistake",
    "Property",
    "Verdict",
    "all_exercises",
    "get_exercise",
    "check_modules",
    "exercise_modules",
    "hint",
]

_MACHINERY = {"core", "compare", "bank", "outcome", "shared", "traps", "weights"}


def check_modules() -> list[str]:
    """Names of the per-notebook check packages, e.g. ``['attention', 'welcome', ...]``."""
    return sorted(
        m.name for m in pkgutil.iter_modules(__path__) if m.name not in _MACHINERY and not m.name.startswith("_")
    )


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


def exercise_modules(notebook: str) -> list[str]:
    """The exercise files of one notebook's package, as module names (``_``-prefixed helpers left out)."""
    package = importlib.import_module(f"{__name__}.{notebook}")
    return sorted(
        f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")
    )


def get_exercise(name: str) -> Exercise:
    """The exercise called ``name``; ``KeyError`` listing the known names if there is none."""
    exercises = all_exercises()
    if name not in exercises:
        raise KeyError(f"no exercise named {name!r}; known: {', '.join(sorted(exercises))}")
    return exercises[name]


@dataclass(frozen=True)
class Hint:
    """One hint, shown as Markdown in a notebook and as plain text elsewhere."""

    exercise: str
    level: int
    of: int
    text: str

    def __str__(self) -> str:
        more = (
            f" Still stuck? `hint({self.exercise!r}, {self.level + 1})`."
            if self.level < self.of
            else " That was the last hint: re-read the text above the exercise, or ask."
        )
        return f"💡 Hint {self.level} of {self.of} for `{self.exercise}`: {self.text}{more}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        return str(self)


def hint(name: str, level: int = 1) -> Hint:
    """Hint ``level`` for exercise ``name``: ``hint("stable_softmax")`` is the gentlest, then 2, 3...

    Hints are progressive and never contain the solution's code (``course-lab release`` refuses a
    notebook whose hints do). A misspelt name or a level out of range is a ``ValueError`` that says
    what was probably meant: ``hint("stable_sofmax")`` -> "did you mean hint('stable_softmax')?".
    """
    exercises = all_exercises()
    if not isinstance(name, str) or name not in exercises:
        raise ValueError(_unknown_name(name, exercises))
    exercise = exercises[name]
    top = max(1, len(exercise.hints))
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= top:
        raise ValueError(
            f"level must be an int from 1 to {top} for `{name}`, got {level!r}: "
            f"did you mean hint({name!r}, {_nearest_level(level, top)})?"
        )
    return Hint(name, level, len(exercise.hints), exercise.hint(level))


def _unknown_name(name, exercises: dict[str, Exercise]) -> str:
    """The error for a name that is no exercise, with the closest names (``difflib``) as suggestions."""
    wanted = getattr(name, "__name__", name)  # hint(stable_softmax): the function instead of its name
    close = difflib.get_close_matches(wanted.strip().lower(), exercises, n=3) if isinstance(wanted, str) else []
    if wanted in exercises:
        close = [wanted]
    start = f"name must be an exercise name (a string) such as 'stable_softmax', got {name!r}"
    if close:
        return f"{start}: did you mean " + " or ".join(f"hint({c!r})" for c in close) + "?"
    return f"{start}; known: {', '.join(sorted(exercises))}"


def _nearest_level(level, top: int) -> int:
    """The level a bad ``level`` most likely meant, within 1..top: ``"2"`` -> 2, 5 of 3 -> 3, 0 -> 1."""
    try:
        number = round(float(level))
    except (TypeError, ValueError, OverflowError):
        return 1
    return min(max(number, 1), top)
