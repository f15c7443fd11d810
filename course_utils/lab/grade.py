"""Grade one submitted notebook: run it in a sandboxed kernel, then judge each exercise here.

For each exercise listed (with its points) for the notebook, the graded tests are the public
cases (``cases(0)``), the same exercise on hidden seeds (``cases(1)``, ``cases(2)`` by default),
then any instructor tests from ``--hidden-tests``. Each case calls the student's function in the
kernel through a ``StudentProxy``; the expected value and the verdict are computed in this process
with ``Exercise.judge``. An exercise scores its full points when every graded test passes, else 0.

Before the cases, the grader asks where the student's object comes from (``StudentProxy.origin``):
an object whose code lies in the course's package, or whose code object is a course function's
(same byte code, names and first line, however its ``__module__``, name or file are disguised), is
the course's reference: status ``uses_reference``, 0 points. An object imported from elsewhere is
``not_defined``. (Code retyped or pasted into a cell is the student's own code here.) Then every
graded call is watched (``probe.py``): if the exercise's reference code runs during a call (the
reference itself, and the course function it only delegates to, ``reference_codes``), the student's
function is a wrapper around the reference: ``uses_reference`` too.

Statuses per exercise: ``ok`` (graded: pass, fail or not attempted; see the feedback),
``not_defined``, ``uses_reference``, ``timeout``, ``kernel_died``, ``probe_failed``.

Leaves out: finding submissions and writing the gradebook (``folder.py``, ``gradebook.py``).
"""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib
import inspect
import types
import pickle
import sys
import textwrap
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from course_utils.checks import check_modules, exercise_modules
from course_utils.checks.core import NOT_ATTEMPTED, PASSED, Exercise, Outcome
from course_utils.lab.hidden import HiddenTests
from course_utils.lab.cells import CellProblem
from course_utils.lab.kernel import KernelDied, ProbeTimeout, SubmissionKernel
from course_utils.lab.limits import Limits
from course_utils.lab.kernel_code import FINGERPRINT_CODE
from course_utils.lab.probe import (
    NotDefined,
    ProbeFailed,
    ReferenceCalled,
    StudentProxy,
    StudentRaised,
)


@dataclass
class ExerciseResult:
    exercise: str
    points: float
    max_points: float
    status: str
    feedback: str


@dataclass
class SubmissionResult:
    student: str
    submission: str
    notebook: str
    status: str
    exercises: list[ExerciseResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "SubmissionResult":
        rows = [ExerciseResult(**row) for row in data.pop("exercises")]
        return cls(exercises=rows, **data)


def exercise_files() -> dict[str, str]:
    """Which file defines each course exercise: ``{'stable_softmax': '.../checks/welcome/stable_softmax.py'}``.

    The sandboxed kernel loads that file afresh to run the exercise's cases (``probe``)."""
    files = {}
    for notebook in check_modules():
        for module_name in exercise_modules(notebook):
            module = importlib.import_module(module_name)
            for exercise in getattr(module, "EXERCISES", {}):
                files[exercise] = module.__file__
    return files


@functools.lru_cache(maxsize=1)
def course_fingerprints() -> frozenset[str]:
    """Fingerprints (``kernel_code.FINGERPRINT_CODE``) of every function and class the course package defines."""
    namespace: dict = {}
    exec(FINGERPRINT_CODE, namespace)
    fingerprint = namespace["_course_lab_fingerprint"]
    exercise_files()  # imports every checks module, and with them the reference code
    found = set()
    for module_name, module in list(sys.modules.items()):
        if module_name != "course_utils" and not module_name.startswith("course_utils."):
            continue
        for value in list(vars(module).values()):
            if callable(value) and getattr(value, "__module__", None) == module_name:
                found.add(fingerprint(value)[1])
    from course_utils.checks import all_exercises

    found.update(fingerprint(ex.reference)[1] for ex in all_exercises().values())
    found.discard(None)
    return frozenset(found)


def is_course_code(origin: dict) -> bool:
    """Whether the student's object is the course's own code: ``{'file': '.../course_utils/softmax.py'}`` -> True."""
    import course_utils

    package = str(Path(course_utils.__file__).resolve().parent)
    where = origin.get("file") or ""
    inside = where.startswith(package + "/") or "course_utils" in Path(where).parts
    return inside or origin.get("fingerprint") in course_fingerprints()


def _course_function(obj) -> types.FunctionType | None:
    """``obj`` as a plain function defined in the course package (decorators unwrapped), else ``None``."""
    import course_utils

    obj = getattr(obj, "__func__", getattr(obj, "func", obj))  # bound method, functools.partial
    try:
        obj = inspect.unwrap(obj)
    except ValueError:
        return None
    if not isinstance(obj, types.FunctionType):
        return None
    package = str(Path(course_utils.__file__).resolve().parent)
    try:
        inside = str(Path(obj.__code__.co_filename).resolve()).startswith(package + "/")
    except OSError:
        return None
    return obj if inside else None


def _delegate(fn: types.FunctionType) -> types.FunctionType | None:
    """The course function ``fn`` only hands its work to, if its body is one ``return g(...)`` (a
    docstring aside) and ``g`` (a global name or ``module.name``) is a course function: the checks'
    ``def stable_softmax(x): return softmax(x, dim=-1)`` -> ``course_utils.softmax.softmax``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return None
    func = body[0].value.func
    if isinstance(func, ast.Name):
        target = fn.__globals__.get(func.id)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        owner = fn.__globals__.get(func.value.id)
        target = getattr(owner, func.attr, None) if isinstance(owner, types.ModuleType) else None
    else:
        return None
    return _course_function(target)


_WATCHED: dict[int, tuple[Exercise, list[tuple[int, str]]]] = {}


def reference_codes(exercise: Exercise) -> list[tuple[int, str]]:
    """``(first line, digest)`` of the course code that counts as the exercise's reference, for the
    kernel to watch each graded call for (``kernel_code.probe_code``): the reference function (or the
    ``forward`` of a reference class and of its course bases), and, when it only delegates (``_delegate``),
    the course function it calls, and so on, three levels at most. Course helpers it merely uses are
    not watched, so a later exercise may still call an earlier exercise's reference (as the notebooks
    do)."""
    key = id(exercise)
    if key in _WATCHED:
        return _WATCHED[key][1]
    namespace: dict = {}
    exec(FINGERPRINT_CODE, namespace)
    digest = namespace["_course_lab_code_digest"]
    reference = exercise.reference
    if isinstance(reference, type):
        # The student writes `forward`; `__init__` and weight set-up are the notebook's scaffolding, which a
        # student may inherit from the course's class. So: `forward` of the reference and its course bases
        # (nn.Module's own is not course code).
        functions = [_course_function(vars(k)["forward"]) for k in reference.__mro__ if "forward" in vars(k)]
    else:
        functions, fn = [], _course_function(reference)
        for _ in range(4):
            if fn is None or fn in functions:
                break
            functions.append(fn)
            fn = _delegate(fn)
    watch = sorted({(f.__code__.co_firstlineno, digest(f.__code__)) for f in functions if f is not None})
    _WATCHED[key] = (exercise, watch)  # the exercise kept alive, so its id is not reused
    return watch


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
