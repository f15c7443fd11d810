"""The machinery shared by every graded check: cases, comparison, diagnosis, verdicts.

An ``Exercise`` says how to test one student function: which seeded inputs to try (``cases``), how
to call the function on one of them (``run``), the reference answer, properties any right answer
has, a bank of typical ``Mistake``s (each a wrong implementation with the hint to show when a
student's output matches it), a bank of accepted ``Alternative``s (correct implementations written
differently, which the check must accept), progressive ``hints`` (a nudge first, never the code) and
the precision it teaches (``tolerance``, a key of ``course_utils.tolerances.TEACHING_TOLERANCES``).

``Exercise.check(fn)`` runs everything in-process and returns a one-line ``Verdict``. For each case
the reference runs first, on its own copy of the inputs; the student's function gets another copy,
so a function that works in place cannot change the expected answer (it gets a friendly note). An
exception in the student's code comes back as one line naming the line of their code and a hint.
The grader reuses the same pieces, but calls ``run`` inside the student's kernel and ``diagnose`` in
its own process, so nothing a student redefines can change a verdict.

Leaves out: running a student's call and describing its error (``outcome``), comparing answers
(``compare``), and anything specific to one exercise (``checks/<notebook>/<exercise>.py``).
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from course_utils.checks.compare import describe_mismatch
from course_utils.checks.outcome import Outcome, passed_line
from course_utils.tolerances import teaching_tolerance

PASSED, FAILED, NOT_ATTEMPTED, ERROR = "passed", "failed", "not_attempted", "error"
NOT_ATTEMPTED_MESSAGE = "not attempted yet: replace the `raise NotImplementedError` stub with your code"


@dataclass(frozen=True)
class Case:
    """One set of inputs: ``Case("two equal logits", args=(torch.zeros(2),))``."""

    label: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Property:
    """Something every right answer satisfies; ``holds(case, output)`` returns True when it does."""

    name: str
    holds: Callable[[Case, Any], bool]
    hint: str


@dataclass(frozen=True)
class Mistake:
    """A typical wrong implementation and the hint shown when a student's output matches it."""

    name: str
    impl: Callable
    hint: str


@dataclass(frozen=True)
class Alternative:
    """A correct implementation written differently from the reference (einsum, float32, in place...).

    The check must accept every alternative in an exercise's bank; ``tests/test_checks.py`` proves it.
    """

    name: str
    impl: Callable


@dataclass(frozen=True)
class Judgement:
    """One case judged (``Exercise.diagnose``): its status, the message, and what the answer matched:
    a bank mistake's ``mistake`` name and ``hint``, or a property's ``hint`` (no name)."""

    status: str
    message: str = ""
    mistake: str = ""
    hint: str = ""


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check. Its text form is the single line a student sees."""

    exercise: str
    status: str
    message: str
    cases: int = 0

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def __str__(self) -> str:
        icon = {PASSED: "✅", FAILED: "❌", NOT_ATTEMPTED: "⏳", ERROR: "⚠️"}[self.status]
        return f"{icon} {self.exercise}: {self.message}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython display hook
        printer.text(str(self))


def pristine_copy(case: "Case") -> "Case":
    """A deep copy of a case's inputs, so no call can change what the next call sees."""
    return Case(case.label, copy.deepcopy(case.args), copy.deepcopy(case.kwargs))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a.detach(), b.detach()))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    scaffolding = (torch.nn.Module, torch.optim.Optimizer)
    if isinstance(a, scaffolding) or isinstance(b, scaffolding):
        return True  # modules and optimisers are the exercise's own scaffolding (a training step changes them)
    try:
        return bool(a == b)
    except Exception:
        return True


def changed_inputs(before: "Case", after: "Case", names: Sequence[str] = ()) -> tuple[str, ...]:
    """Names (or positions) of the inputs that differ between two copies of a case."""
    changed = []
    for i, (a, b) in enumerate(zip(before.args, after.args)):
        if not _same(a, b):
            changed.append(names[i] if i < len(names) else f"argument {i + 1}")
    changed += [key for key in before.kwargs if not _same(before.kwargs[key], after.kwargs.get(key))]
    return tuple(changed)


def call_with_case(fn: Callable, case: Case) -> Any:
    """The default ``run``: ``fn(*case.args, **case.kwargs)``."""
    return fn(*case.args, **case.kwargs)


@dataclass
class Exercise:
    """How to check one exercise. ``name`` is the key used in notebook metadata and the grader.

    ``cases(seed)`` builds the inputs (seed 0 for the public check, other seeds for hidden ones);
    ``run(impl, case)`` calls a student's or the reference implementation on one case;
    ``compare(expected, got)`` returns ``None`` when they agree, else a short description.
    """

    name: str
    reference: Callable
    cases: Callable[[int], Sequence[Case]]
    mistakes: Sequence[Mistake] = ()
    properties: Sequence[Property] = ()
    run: Callable[[Callable, Case], Any] = call_with_case
    compare: Callable[[Any, Any], str | None] | None = None  # default: describe_mismatch at `tolerance`
    function_name: str | None = None  # the name the notebook defines; defaults to reference's
    wants_class: bool = False  # the student provides a class (e.g. an nn.Module), not a function
    # ``run`` needs the live answer (its autograd graph), not a copy: the grader runs it in the student's kernel
    run_in_kernel: bool = False
    alternatives: Sequence[Alternative] = ()
    hints: Sequence[str] = ()
    tolerance: str = "float32"  # the precision the exercise teaches: a key of TEACHING_TOLERANCES

    def __post_init__(self) -> None:
        teaching_tolerance(self.tolerance)  # an unknown precision is a ValueError here, not at check time

    @property
    def expected_name(self) -> str:
        return self.function_name or self.reference.__name__

    def matches(self, expected: Any, got: Any) -> str | None:
        """``None`` when ``got`` is an accepted answer for ``expected``, else what differs."""
        if self.compare is not None:
            return self.compare(expected, got)
        return describe_mismatch(expected, got, tol=teaching_tolerance(self.tolerance))

    def expected(self, case: Case) -> Any:
        """The reference answer for ``case``, computed on a pristine copy of its inputs."""
        return self.run(self.reference, pristine_copy(case))

    def hint(self, level: int = 1) -> str:
        """Hint number ``level`` (1 = the gentlest nudge)."""
        top = max(1, len(self.hints))
        if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= top:
            raise ValueError(f"level must be an int from 1 to {top} for `{self.name}`, got {level!r}")
        return self.hints[level - 1] if self.hints else f"no hints are written for `{self.name}` yet"

    # -- the pieces the grader also uses -------------------------------------------------------
    def validate_impl(self, impl: Any) -> str | None:
        """Reject what cannot be a submission: not callable, or a signature the check cannot call."""
        kind = "a class" if self.wants_class else "a function"
        if not callable(impl):
            return f"expected {kind} (pass `{self.expected_name}` itself, not its result), got {type(impl).__name__}"
        if self.wants_class and not inspect.isclass(impl):
            return f"expected a class such as `{self.expected_name}`, got {type(impl).__name__}"
        if self.wants_class:
            return None
        try:
            student = inspect.signature(impl)
            wanted = inspect.signature(self.reference)
        except (TypeError, ValueError):
            return None  # builtins without signatures: let the call decide
        for case in self.cases(0)[:1]:
            try:
                student.bind(*case.args, **case.kwargs)
            except TypeError:
                return (
                    f"your function's signature is {self.expected_name}{student}; "
                    f"the check calls it like {self.expected_name}{wanted}"
                )
        return None

    def judge(self, case: Case, outcome: Outcome, expected: Any = None, have_expected: bool = False) -> tuple[str, str]:
        """Status and message for one case: (PASSED, ""), (NOT_ATTEMPTED, ...), (FAILED, hint)...

        Pass ``expected`` (with ``have_expected=True``) when it was computed before the student ran;
        otherwise it is computed here from a pristine copy of the case.
        """
        found = self.diagnose(case, outcome, expected, have_expected)
        return found.status, found.message

    def diagnose(self, case: Case, outcome: Outcome, expected: Any = None, have_expected: bool = False) -> Judgement:
        """``judge``'s verdict as data: also the bank mistake or the property the answer matched."""
        if outcome.error_type == "NotImplementedError":
            return Judgement(NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE)
        if outcome.error_type is not None:
            return Judgement(ERROR, f"{outcome.describe_error()} (case: {case.label})")
        if not have_expected:
            expected = self.expected(case)
        mismatch = self.matches(expected, outcome.value)
        if mismatch is None:
            return Judgement(PASSED)
        for mistake in self.mistakes:
            wrong = Outcome.capture(lambda: self.run(mistake.impl, pristine_copy(case)))
            if wrong.error_type is None and self.matches(wrong.value, outcome.value) is None:
                return Judgement(FAILED, f"{mistake.hint} (case: {case.label})", mistake.name, mistake.hint)
        for prop in self.properties:
            try:
                holds = bool(prop.holds(case, outcome.value))
            except Exception:
                holds = False
            if not holds:
                return Judgement(FAILED, f"{prop.hint} (case: {case.label})", hint=prop.hint)
        return Judgement(FAILED, f"{mismatch} (case: {case.label})")

    def verdict(self, results: Sequence[tuple[str, str]], notes: Sequence[str] = (), seed: int = 0) -> Verdict:
        """Fold per-case results into one verdict: the first failure wins, else a pass line (``passed_line``)."""
        note = "".join(f" (note: {n})" for n in dict.fromkeys(notes))
        for status, message in results:
            if status != PASSED:
                return Verdict(self.name, status, message + note, len(results))
        return Verdict(self.name, PASSED, passed_line(len(results), seed) + note, len(results))

    def _argument_names(self) -> list[str]:
        try:
            return list(inspect.signature(self.reference).parameters)
        except (TypeError, ValueError):
            return []

    # -- the in-notebook check -------------------------------------------------------------------
    def check(self, impl: Any, seed: int = 0) -> Verdict:
        """Run the check in this process and return its verdict (shown as one line)."""
        problem = self.validate_impl(impl)
        if problem is not None:
            return Verdict(self.name, ERROR, problem)
        results, notes = [], []
        names = [] if self.wants_class else self._argument_names()
        for case in self.cases(seed):
            expected = self.expected(case)  # before the student's code runs, on its own copy
            student_case = pristine_copy(case)
            outcome = Outcome.capture(lambda: self.run(impl, student_case))
            changed = changed_inputs(case, student_case, names)
            if changed:
                notes.append(
                    f"your function changed its input {', '.join(f'`{c}`' for c in changed)} in place; "
                    "the check gave it a copy, but callers usually expect inputs to stay as they were"
                )
            status, message = self.judge(case, outcome, expected, have_expected=True)
            results.append((status, message))
            if status != PASSED:
                break
        return self.verdict(results, notes, seed)
