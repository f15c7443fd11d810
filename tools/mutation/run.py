"""Run a mutant through its exercise's check exactly as a student's answer would be.

The mutant's definition is executed in the notebook's namespace (``sources.namespace``) and the
object it defines is run on every case of the public seed 0 and of the hidden seeds the grader uses
(1 and 2 by default, ``course-lab grade``), as ``Exercise.check`` runs a student's answer: the
exercise's ``run`` on a pristine copy of the case, its answer compared with the reference's by the
exercise's own ``matches``. It is killed when some case raises or mismatches (exactly the cases
where ``Exercise.judge`` does not say "passed"; the diagnosis that follows a mismatch, which mistake
it is, is skipped: it changes the hint, not the verdict) or when one case runs past its time limit:
``SLOWER`` times the notebook's own solution on that case, at least ``MIN_LIMIT``, in CPU time
(``ITIMER_PROF``, so pytest-timeout's wall-clock alarm is left alone and a loaded machine does not
kill a mutant). The reference's answers and the solution's times are measured once per exercise
and seed (``expected_answers``, ``solution_times``), on the machine that replays.
"""

from __future__ import annotations

import functools
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass

from course_utils.checks import all_exercises
from course_utils.checks.core import Outcome, pristine_copy
from tools.mutation.operators import Patch
from tools.mutation.sources import Solution, namespace, solution

GRADED_SEEDS = (0, 1, 2)  # the public check and the grader's default hidden seeds
MIN_LIMIT, SLOWER = 0.25, 5  # CPU seconds one case of a mutant may take: max(MIN_LIMIT, SLOWER x the solution's)


class MutantTimeout(BaseException):
    """Raised inside a mutant that runs past its limit (a BaseException, so ``Outcome.capture`` lets it through)."""


@contextmanager
def cpu_limit(seconds: float):
    """Raise ``MutantTimeout`` once the process has used ``seconds`` more CPU time."""

    def expire(signum, frame):
        raise MutantTimeout()

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def build(sol: Solution, patch: Patch | None = None):
    """The function or class the (mutated) solution defines, run in the notebook's namespace."""
    source = sol.source if patch is None else patch.apply(sol.source)
    scope = namespace(sol.notebook)
    exec(compile(source, f"<mutant of {sol.name}>", "exec"), scope)
    return scope[sol.name]


@functools.lru_cache(maxsize=None)
def expected_answers(exercise: str, seed: int) -> tuple:
    """``(case, reference answer)`` for every case of ``exercise`` on ``seed``, computed once."""
    checked = all_exercises()[exercise]
    return tuple((case, checked.expected(case)) for case in checked.cases(seed))


@functools.lru_cache(maxsize=None)
def solution_times(exercise: str, seed: int) -> tuple[float, ...]:
    """CPU seconds the notebook's own solution takes on each case of ``seed`` (the fastest of two runs)."""
    checked, impl = all_exercises()[exercise], build(solution(exercise))
    times = []
    for case, _ in expected_answers(exercise, seed):
        best = float("inf")
        for _ in range(2):
            began = time.process_time()
            checked.run(impl, pristine_copy(case))
            best = min(best, time.process_time() - began)
        times.append(best)
    return tuple(times)


def first_failure(exercise: str, impl, seeds=GRADED_SEEDS, timed: bool = False) -> str | None:
    """Where ``impl`` first fails its check (``'seed 0, case ...: ...'``), or ``None`` if it passes every case.

    ``timed``: each case may take ``max(MIN_LIMIT, SLOWER x`` the solution's time) of CPU, else it fails."""
    checked = all_exercises()[exercise]
    for seed in seeds:
        limits = [max(MIN_LIMIT, SLOWER * t) for t in solution_times(exercise, seed)] if timed else None
        for i, (case, expected) in enumerate(expected_answers(exercise, seed)):
            where = f"seed {seed}, case {case.label!r}"
            try:
                with cpu_limit(limits[i] if timed else 3600.0):
                    outcome = Outcome.capture(lambda: checked.run(impl, pristine_copy(case)))
            except MutantTimeout:
                return f"{where}: timeout ({limits[i]:.2g} s of CPU)"
            if outcome.error_type is not None:
                return f"{where}: raised {outcome.error_type}"
            try:
                mismatch = checked.matches(expected, outcome.value)
            except Exception as exc:  # an answer so odd the comparison fails: the grader fails it too
                mismatch = f"comparison raised {type(exc).__name__}"
            if mismatch is not None:
                return f"{where}: {mismatch}"[:200]
    return None


@dataclass(frozen=True)
class Result:
    killed: bool
    how: str  # "seed 0, case '...': <what differs>", "...: timeout (...)" or "passed seeds 0, 1, 2"


def judge(sol: Solution, patch: Patch | None, seeds=GRADED_SEEDS) -> Result:
    """Check the (mutated) solution on each seed in turn; stop at the first case that does not pass."""
    try:
        impl = build(sol, patch)
    except Exception as exc:
        return Result(True, f"definition raised {type(exc).__name__}")
    failure = first_failure(sol.exercise, impl, seeds, timed=patch is not None)
    return Result(failure is not None, failure or f"passed seeds {', '.join(map(str, seeds))}")
