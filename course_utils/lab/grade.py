"""Grade one submitted notebook: run it in a sandboxed kernel, then judge each exercise here.

For each exercise listed (with its points) for the notebook, the graded tests are the public
cases (``cases(0)``), the same exercise on hidden seeds (``cases(1)``, ``cases(2)`` by default),
then any instructor tests from ``--hidden-tests``. Each case calls the student's function in the
kernel through a ``StudentProxy``; the expected value and the verdict are computed in this process
with ``Exercise.judge``. An exercise scores its full points when every graded test passes, else 0.

Before the cases, an object that is the course's own code (``course_code.is_course_code``) gets
status ``uses_reference``, 0 points; an object imported from elsewhere is ``not_defined``. (Code
retyped or pasted into a cell is the student's own code here.) A graded call during which the
exercise's reference code runs (``course_code.reference_codes``) is a wrapper around the
reference: ``uses_reference`` too.

Statuses per exercise: ``ok`` (graded: pass, fail or not attempted; see the feedback),
``not_defined``, ``uses_reference``, ``timeout``, ``kernel_died``, ``probe_failed``.

Leaves out: finding submissions and writing the gradebook (``folder.py``, ``gradebook.py``).
"""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path
from typing import Callable

import nbformat

from course_utils.checks.core import NOT_ATTEMPTED, PASSED, Exercise, Outcome
from course_utils.lab.cells import CellProblem
from course_utils.lab.course_code import is_course_code, reference_codes
from course_utils.lab.hidden import HiddenTests
from course_utils.lab.kernel import KernelDied, ProbeTimeout, SubmissionKernel
from course_utils.lab.limits import Limits
from course_utils.lab.probe import (
    NotDefined,
    ProbeFailed,
    ReferenceCalled,
    StudentProxy,
    StudentRaised,
)
from course_utils.lab.results import ExerciseResult


def _raised(exc: StudentRaised) -> Outcome:
    return Outcome(
        error_type=exc.error_type, error_message=exc.message, error_line=exc.line, error_function=exc.function
    )


def _outcome(exercise: Exercise, proxy: StudentProxy, case) -> Outcome:
    try:
        if exercise.wants_class or exercise.run_in_kernel:  # objects and autograd graphs stay in the kernel
            return Outcome(value=proxy.run_remote(case))
        try:
            return Outcome(value=exercise.run(proxy, case))
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            if "pickle" not in str(exc):
                raise
            return Outcome(value=proxy.run_remote(case))  # inputs only the exercise's own run can build
    except StudentRaised as exc:
        return _raised(exc)


def _judge(exercise: Exercise, case, outcome: Outcome) -> tuple[str, str]:
    try:
        return exercise.judge(case, outcome)
    except Exception as exc:  # an answer so odd the comparison itself fails
        return (
            "failed",
            f"the grader could not compare your answer ({type(exc).__name__}: {str(exc)[:120]}) (case: {case.label})",
        )


def grade_exercise(
    name: str,
    max_points: float,
    exercise: Exercise,
    make_proxy: Callable,
    seeds: list[int],
    hidden: HiddenTests,
    files: dict[str, str],
) -> ExerciseResult:
    """Run every graded test for one exercise; ``KernelDied`` propagates to the caller."""
    groups = [
        (exercise, seed, "public check" if seed == 0 else f"hidden case, seed {seed}", files.get(name))
        for seed in (0, *seeds)
    ]
    extra_exercises, functions = hidden.for_exercise(name)
    groups += [(extra, 0, f"instructor test {Path(path).name}", path) for extra, path in extra_exercises]
    fn_name = exercise.expected_name
    tested = 0
    try:
        try:
            origin = make_proxy(fn_name, None).origin()
        except ProbeTimeout as exc:
            return ExerciseResult(name, 0, max_points, "timeout", f"`{fn_name}` {exc}")
        except StudentRaised as exc:
            raise ProbeFailed(f"the grader could not inspect `{fn_name}` ({exc.error_type})") from None
        if is_course_code(origin):
            return ExerciseResult(
                name,
                0,
                max_points,
                "uses_reference",
                f"`{fn_name}` is the course's reference implementation, not your own code",
            )
        if origin.get("module") != "__main__":
            raise NotDefined()
        watch = reference_codes(exercise)
        for ex, seed, label, path in groups:
            proxy = make_proxy(ex.expected_name, (path, name) if path else None, watch)
            for case in ex.cases(seed):
                try:
                    status, message = _judge(ex, case, _outcome(ex, proxy, case))
                except ProbeTimeout as exc:
                    return ExerciseResult(name, 0, max_points, "timeout", f"`{fn_name}` {exc} (case: {case.label})")
                tested += 1
                if status == NOT_ATTEMPTED:
                    return ExerciseResult(name, 0, max_points, "ok", "not attempted")
                if status != PASSED:
                    return ExerciseResult(name, 0, max_points, "ok", f"{message} [{label}]")
        proxy = make_proxy(fn_name, None, watch)
        for test in functions:
            try:
                test(proxy)
            except ProbeTimeout as exc:
                return ExerciseResult(name, 0, max_points, "timeout", f"`{fn_name}` {exc} [{test.__name__}]")
            except StudentRaised as exc:
                text = "not attempted" if exc.error_type == "NotImplementedError" else _raised(exc).describe_error()
                return ExerciseResult(name, 0, max_points, "ok", f"{text} [{test.__name__}]")
            except AssertionError as exc:
                return ExerciseResult(name, 0, max_points, "ok", f"{exc or 'assertion failed'} [{test.__name__}]")
            tested += 1
    except NotDefined:
        return ExerciseResult(
            name,
            0,
            max_points,
            "not_defined",
            f"the notebook defines no `{fn_name}` of its own (did its cell raise, or was it renamed? "
            "an imported reference does not count)",
        )
    except ProbeFailed as exc:
        return ExerciseResult(name, 0, max_points, "probe_failed", str(exc))
    except ReferenceCalled as exc:
        if exc.untraced:
            return ExerciseResult(
                name,
                0,
                max_points,
                "probe_failed",
                f"`{fn_name}` switched off the grader's watch for the course's reference (sys.settrace)",
            )
        called = f" (`{exc.name}`)" if exc.name else ""
        return ExerciseResult(
            name,
            0,
            max_points,
            "uses_reference",
            f"`{fn_name}` calls the course's reference implementation{called}; it must be your own code",
        )
    return ExerciseResult(name, max_points, max_points, "ok", f"passed all {tested} graded tests")


def _grade_all(
    points: dict[str, float],
    registry: dict[str, Exercise],
    make_proxy: Callable,
    seeds: list[int],
    hidden: HiddenTests,
    files: dict[str, str],
    dead_reason: str | None,
) -> list[ExerciseResult]:
    results = []
    for name, max_points in points.items():
        if dead_reason is not None:
            results.append(ExerciseResult(name, 0, max_points, "kernel_died", dead_reason))
            continue
        if name not in registry:
            results.append(ExerciseResult(name, 0, max_points, "grader_error", f"no check found for exercise {name!r}"))
            continue
        try:
            results.append(grade_exercise(name, max_points, registry[name], make_proxy, seeds, hidden, files))
        except KernelDied as exc:
            dead_reason = f"the kernel died while grading {name}: {exc}"
            results.append(ExerciseResult(name, 0, max_points, "kernel_died", dead_reason))
    return results


def _describe(problem: CellProblem) -> str:
    return f"cell {problem.index}: {problem.kind.replace('_', ' ')}: {problem.detail}"


async def grade_notebook(
    nb: nbformat.NotebookNode,
    points: dict[str, float],
    registry: dict[str, Exercise],
    limits: Limits,
    seeds: list[int],
    hidden: HiddenTests,
    files: dict[str, str],
    secrets: list[str] = (),
) -> tuple[str, list[ExerciseResult], list[str]]:
    """Run ``nb`` in a fresh sandboxed kernel and grade it: (status, per-exercise results, notes).

    ``secrets``: grader folders the kernel must not see even if they lie under a folder it reads."""
    async with SubmissionKernel(limits, secrets) as kernel:
        watch = sorted({registry[name].expected_name for name in points if name in registry})
        problems = await kernel.run_notebook(nb, watch)
        loop = asyncio.get_running_loop()
        dead = next((_describe(p) for p in problems if p.kind == "kernel_died"), None)

        def make_proxy(fn_name: str, runner, watch=None):
            return StudentProxy(kernel, loop, fn_name, runner, watch)

        results = await asyncio.to_thread(_grade_all, points, registry, make_proxy, seeds, hidden, files, dead)
    notes = [_describe(p) for p in problems]
    statuses = {r.status for r in results}
    kinds = {p.kind for p in problems}
    if "kernel_died" in statuses or "kernel_died" in kinds:
        status = "kernel_died"
    elif "total_timeout" in kinds or any("total time limit" in r.feedback for r in results if r.status == "timeout"):
        status = "total_timeout"
    elif "timeout" in kinds:
        status = "cell_timeout"
    elif "timeout" in statuses:
        status = "timeout"
    else:
        status = "ok"
    return status, results, notes
