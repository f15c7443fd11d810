"""What the grader judges a submission by, built once per job: ``GradingPlan``.

A plan holds the checks by exercise name (``registry``, with hidden cases keyed by the run's secret),
the hidden seeds, the instructor's tests (``hidden.HiddenTests``) and the checks file of each exercise
(``uses_reference.exercise_files``, so the kernel can build inputs only the exercise's own ``run``
can). ``plan_for_job(job)`` builds it from a job's JSON (``folder.make_job``); ``grade.py`` passes
that one object down, from the notebook to each exercise.

Leaves out: the kernel and its limits (``kernel.py``, ``limits.py``) and the grading (``grade.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from course_utils.checks import all_exercises
from course_utils.checks.core import Exercise
from course_utils.lab.grading.hidden import HiddenTests, keyed_exercise, load_hidden_tests
from course_utils.lab.grading.uses_reference import exercise_files


@dataclass(frozen=True)
class GradingPlan:
    """``GradingPlan({'stable_softmax': ex}, seeds=(1, 2))``: judge with these checks on these hidden seeds."""

    registry: Mapping[str, Exercise]
    seeds: tuple[int, ...] = ()
    hidden: HiddenTests = field(default_factory=HiddenTests)
    files: Mapping[str, str] = field(default_factory=dict)  # exercise name -> its checks file

    def __post_init__(self):
        seeds = check_seeds(self.seeds)
        if not isinstance(self.hidden, HiddenTests):
            raise TypeError(f"hidden must be a HiddenTests, got {type(self.hidden).__name__}")
        object.__setattr__(self, "seeds", seeds)
        object.__setattr__(self, "registry", MappingProxyType(dict(self.registry)))
        object.__setattr__(self, "files", MappingProxyType(dict(self.files)))


def check_seeds(seeds) -> tuple[int, ...]:
    """``[1, 2]`` -> ``(1, 2)``; ``ValueError`` for a seed that is not a whole number >= 1."""
    seeds = tuple(seeds)
    if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in seeds):
        raise ValueError(f"seeds must be whole numbers >= 1 (seed 0 is the public check), got {list(seeds)}")
    return seeds


def plan_for_job(job: dict) -> GradingPlan:
    """The plan a worker's job asks for: every course exercise (keyed by ``case_key`` when it has one), its
    ``seeds``, the instructor's tests in ``hidden_tests`` (a folder, or none) and the checks files."""
    registry = all_exercises()
    if job.get("case_key"):
        registry = {name: keyed_exercise(ex, job["case_key"]) for name, ex in registry.items()}
    folder = Path(job["hidden_tests"]) if job.get("hidden_tests") else None
    return GradingPlan(registry, tuple(job["seeds"]), load_hidden_tests(folder, set(registry)), exercise_files())
