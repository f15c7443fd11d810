"""Where the course's reference is, and whether a student's object is it (``uses_reference``): the course's own
code as the grader sees it, where each exercise is defined, and how to tell the reference from a student's code.

``exercise_files()`` says which file defines each exercise (the sandboxed kernel loads that file
afresh to run the exercise's cases). Before the cases, the grader asks where the student's object
comes from (``StudentProxy.origin``): an object whose code lies in the course's package, or whose
code object is a course function's (same byte code, names and first line, however its
``__module__``, name or file are disguised; ``course_fingerprints``), is the course's reference
(``is_course_code``). Then every graded call is watched (``kernel_code.py``) for the exercise's
reference code (``reference_codes``: the reference itself, and the course function it only
delegates to): if it runs during a call, the student's function is a wrapper around the reference.

Leaves out: the watch itself, which runs in the kernel (``kernel_code.py``), and the statuses and
points that follow (``grade.py``).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import sys
import textwrap
import types
from pathlib import Path

from course_utils.checks import check_modules, exercise_modules
from course_utils.checks.core import Exercise
from course_utils.lab.grading.kernel_code import FINGERPRINT_CODE


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
