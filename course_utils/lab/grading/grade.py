"""Grade one submitted notebook: run it in a sandboxed kernel, then judge each exercise here.

What to judge by (the checks, hidden seeds, instructor tests, checks files) is one ``GradingPlan``
(``plan.py``), built once per job and passed down. For each exercise listed (with its points) for
the notebook, the graded tests are the public cases (``cases(0)``), the same exercise on hidden seeds
(``cases(1)``, ``cases(2)`` by default), then any instructor tests from ``--hidden-tests``. Each case
calls the student's function in the kernel through a ``StudentProxy``; the expected value and the
verdict are computed in this process with ``Exercise.diagnose``, which says as data which bank
mistake or property the answer matched (nothing here reads a message back). An exercise scores its
full points when every graded test passes, else 0.

Before the cases, an object that is the course's own code (``uses_reference.is_course_code``) gets
status ``uses_reference``, 0 points; an object imported from elsewhere is ``not_defined``. (Code
retyped or pasted into a cell is the student's own code here.) A graded call during which the
exercise's reference code runs (``uses_reference.reference_codes``) is a wrapper around the
reference: ``uses_reference`` too.

A failure on a hidden case (any but the public ones) reaches the student as ``hidden case k of n
failed`` with the matched mistake's hint (``feedback.py``); the full text is the row's ``detail``, and
the bank mistake matched, on any case, its ``mistake`` (the class report counts them).

Statuses (``status.Status``) per exercise: ``ok`` (graded: pass or fail; see the feedback),
``not_attempted``, ``not_defined``, ``uses_reference``, ``timeout``, ``kernel_died``, ``probe_failed``; per
submission, ``total_timeout`` when a graded call timed out with the submission's total time spent.

Leaves out: finding submissions and writing the gradebook (``folder.py``, ``gradebook.py``).
"""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path
from typing import Callable

import nbformat

from course_utils.checks.core import FAILED, NOT_ATTEMPTED, PASSED, Exercise, Judgement, Outcome
from course_utils.lab.grading.uses_reference import is_course_code, reference_codes
from course_utils.lab.grading.cells import blame_course, run_cells
from course_utils.lab.grading.feedback import describe_cell, hidden_failure
from course_utils.lab.grading.kernel import KernelDied, ProbeTimeout, SubmissionKernel
from course_utils.lab.grading.plan import GradingPlan
from course_utils.lab.limits import Limits
from course_utils.lab.grading.probe import (
    NotDefined,
    ProbeFailed,
    ReferenceCalled,
    StudentProxy,
    StudentRaised,
)
from course_utils.lab.results import CellProblem, ExerciseResult
from course_utils.lab.status import Status


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


def _judge(exercise: Exercise, case, outcome: Outcome) -> Judgement:
    try:
        return exercise.diagnose(case, outcome)
    except Exception as exc:  # an answer so odd the comparison itself fails
        return Judgement(
            FAILED,
            f"the grader could not compare your answer ({type(exc).__name__}: {str(exc)[:120]}) (case: {case.label})",
        )


def _failed(name: str, max_points: float, ex: Exercise, outcome: Outcome, found: Judgement, label: str,
            k: int, n: int, own: bool) -> ExerciseResult:
    """The row for a failed case: told in full on a public case (``k`` 0), as ``hidden case k of n`` on a
    hidden one (``feedback.hidden_failure``, with the hint of the mistake or property ``found``), the
    full text kept for the instructor. ``own``: ``ex`` is the course's exercise (its bank's mistake is
    recorded), not an instructor's."""
    full = f"{found.message} [{label}]"
    mistake = found.mistake if own else ""
    if not k:
        return ExerciseResult(name, 0, max_points, Status.OK, full, mistake=mistake)
    text = hidden_failure(k, n, found.hint, outcome if outcome.error_type is not None else None, ex.expected_name)
    return ExerciseResult(name, 0, max_points, Status.OK, text, detail=full, mistake=mistake)


def _instructor_fault(name: str, max_points: float, k: int, n: int, exc: Exception, where: str) -> ExerciseResult:
    """An instructor's test that raised (not an ``AssertionError``) on this answer: that hidden test failed;
    what it raised is for the instructor only (``detail``)."""
    detail = f"the instructor's test raised {type(exc).__name__}: {str(exc)[:200]}{where}"
    return ExerciseResult(name, 0, max_points, Status.OK, hidden_failure(k, n), detail)


def grade_exercise(name: str, max_points: float, make_proxy: Callable, plan: GradingPlan) -> ExerciseResult:
    """Run every graded test of ``plan.registry[name]``; ``KernelDied`` propagates to the caller.

    Hidden tests (every case but the public ones) are numbered 1..n in the order they run; a failure
    on one is told to the student without its inputs or values (``_failed``)."""
    exercise, seeds = plan.registry[name], plan.seeds
    groups = [
        (exercise, seed, "public check" if seed == 0 else f"hidden case, seed {seed}", plan.files.get(name))
        for seed in (0, *seeds)
    ]
    extra_exercises, functions = plan.hidden.for_exercise(name)
    groups += [(extra, 0, f"instructor test {Path(path).name}", path) for extra, path in extra_exercises]
    fn_name = exercise.expected_name
    tested = k = 0
    try:
        try:
            origin = make_proxy(fn_name, None).origin()
        except ProbeTimeout as exc:
            return ExerciseResult(name, 0, max_points, Status.TIMEOUT, f"`{fn_name}` {exc}")
        except StudentRaised as exc:
            raise ProbeFailed(f"the grader could not inspect `{fn_name}` ({exc.error_type})") from None
        if is_course_code(origin):
            return ExerciseResult(
                name,
                0,
                max_points,
                Status.USES_REFERENCE,
                f"`{fn_name}` is the course's reference implementation, not your own code",
            )
        if origin.get("module") != "__main__":
            raise NotDefined()
        watch = reference_codes(exercise)
        public = exercise.cases(0)
        extra_cases = {id(extra): extra.cases(0) for extra, _ in extra_exercises}
        # every seed gives as many cases as the public one (tests/test_grader_path.py checks it)
        n = len(public) * len(seeds) + sum(len(c) for c in extra_cases.values()) + len(functions)
        for ex, seed, label, path in groups:
            proxy = make_proxy(ex.expected_name, (path, name) if path else None, watch)
            own = ex is exercise
            cases = public if own and seed == 0 else extra_cases[id(ex)] if not own else ex.cases(seed)
            for case in cases:
                k += not (own and seed == 0)
                try:
                    outcome = _outcome(ex, proxy, case)
                    found = _judge(ex, case, outcome)
                except (NotDefined, ProbeFailed):
                    raise
                except Exception as exc:  # an instructor's exercise whose own run fails on this answer
                    if own:
                        raise
                    return _instructor_fault(name, max_points, k, n, exc, f" [{label}]")
                except ProbeTimeout as exc:
                    where = f"hidden case {k} of {n}" if k else f"case: {case.label}"
                    full = f"`{fn_name}` {exc} (case: {case.label})"
                    return ExerciseResult(name, 0, max_points, Status.TIMEOUT, f"`{fn_name}` {exc} ({where})", full)
                tested += 1
                if found.status == NOT_ATTEMPTED:
                    return ExerciseResult(name, 0, max_points, Status.NOT_ATTEMPTED, "not attempted")
                if found.status != PASSED:
                    return _failed(name, max_points, ex, outcome, found, label, k, n, own)
        proxy = make_proxy(fn_name, None, watch)
        for test in functions:
            k += 1
            where = f" [{test.__name__}]"
            try:
                test(proxy)
            except ProbeTimeout as exc:
                text = f"`{fn_name}` {exc}"
                hidden_text = f"{text} (hidden case {k} of {n})"
                return ExerciseResult(name, 0, max_points, Status.TIMEOUT, hidden_text, text + where)
            except StudentRaised as exc:
                if exc.error_type == "NotImplementedError":
                    return ExerciseResult(name, 0, max_points, Status.NOT_ATTEMPTED, "not attempted")
                text = hidden_failure(k, n, outcome=_raised(exc), function=fn_name)
                return ExerciseResult(name, 0, max_points, Status.OK, text, _raised(exc).describe_error() + where)
            except AssertionError as exc:
                text = hidden_failure(k, n)
                return ExerciseResult(name, 0, max_points, Status.OK, text, f"{exc or 'assertion failed'}{where}")
            except (NotDefined, ProbeFailed):
                raise
            except Exception as exc:  # e.g. an allclose on a wrongly shaped answer: this test fails, no more
                return _instructor_fault(name, max_points, k, n, exc, where)
            tested += 1
    except NotDefined:
        return ExerciseResult(
            name,
            0,
            max_points,
            Status.NOT_DEFINED,
            f"the notebook defines no `{fn_name}` of its own (did its cell raise, or was it renamed? "
            "an imported reference does not count)",
        )
    except ProbeFailed as exc:
        return ExerciseResult(name, 0, max_points, Status.PROBE_FAILED, str(exc))
    except ReferenceCalled as exc:
        if exc.untraced:
            return ExerciseResult(
                name,
                0,
                max_points,
                Status.PROBE_FAILED,
                f"`{fn_name}` switched off the grader's watch for the course's reference (sys.settrace)",
            )
        called = f" (`{exc.name}`)" if exc.name else ""
        return ExerciseResult(
            name,
            0,
            max_points,
            Status.USES_REFERENCE,
            f"`{fn_name}` calls the course's reference implementation{called}; it must be your own code",
        )
    return ExerciseResult(name, max_points, max_points, Status.OK, f"passed all {tested} graded tests")


def _grade_all(
    points: dict[str, float], plan: GradingPlan, make_proxy: Callable, dead_reason: str | None
) -> list[ExerciseResult]:
    results = []
    for name, max_points in points.items():
        if dead_reason is not None:
            results.append(ExerciseResult(name, 0, max_points, Status.KERNEL_DIED, dead_reason))
            continue
        if name not in plan.registry:
            missing = f"no check found for exercise {name!r}"
            results.append(ExerciseResult(name, 0, max_points, Status.GRADER_ERROR, missing))
            continue
        try:
            results.append(grade_exercise(name, max_points, make_proxy, plan))
        except KernelDied as exc:
            dead_reason = f"the kernel died while grading {name}: {exc}"
            results.append(ExerciseResult(name, 0, max_points, Status.KERNEL_DIED, dead_reason))
    return results


async def grade_notebook(
    nb: nbformat.NotebookNode,
    points: dict[str, float],
    plan: GradingPlan,
    limits: Limits,
    secrets: list[str] = (),
    course: frozenset = frozenset(),
) -> tuple[str, list[ExerciseResult], list[CellProblem]]:
    """Run ``nb`` in a fresh sandboxed kernel and grade it by ``plan``: (status, per-exercise results,
    what went wrong in the cells).

    ``secrets``: grader folders the kernel must not see even if they lie under a folder it reads;
    ``course``: digests of the cells an error in which is the course's (``cells.blame_course``)."""
    async with SubmissionKernel(limits, secrets) as kernel:
        watch = sorted({plan.registry[name].expected_name for name in points if name in plan.registry})
        problems = blame_course(await run_cells(kernel, nb, watch), nb, course)
        loop = asyncio.get_running_loop()
        dead = next((describe_cell(p) for p in problems if p.kind == "kernel_died"), None)

        def make_proxy(fn_name: str, runner, watch=None):
            return StudentProxy(kernel, loop, fn_name, runner, watch)

        results = await asyncio.to_thread(_grade_all, points, plan, make_proxy, dead)
        out_of_time = kernel.remaining() <= 0  # a graded call that timed out then hit the total limit
    statuses = {r.status for r in results}
    kinds = {p.kind for p in problems}
    if Status.KERNEL_DIED in statuses or "kernel_died" in kinds:
        status = Status.KERNEL_DIED
    elif "total_timeout" in kinds or (Status.TIMEOUT in statuses and out_of_time):
        status = Status.TOTAL_TIMEOUT
    elif "timeout" in kinds:
        status = Status.CELL_TIMEOUT
    elif Status.TIMEOUT in statuses:
        status = Status.TIMEOUT
    else:
        status = Status.OK
    return status, results, problems
