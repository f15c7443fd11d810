"""The machinery shared by every graded check: cases, comparison, diagnosis, verdicts.

An ``Exercise`` says how to test one student function: which seeded inputs to try (``cases``), how
to call the function on one of them (``run``), the reference answer, properties any right answer
has, and a bank of typical ``Mistake``s, each a wrong implementation with the hint to show when a
student's output matches it. ``Exercise.check(fn)`` runs everything in-process and returns a
one-line ``Verdict``. The grader reuses the same pieces, but calls ``run`` inside the student's
kernel and ``judge`` in its own process, so nothing a student redefines can change a verdict.

Leaves out: anything specific to one notebook (that lives in ``checks/<notebook>.py``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from course_utils.checks.compare import describe_mismatch

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


@dataclass(frozen=True)
class Outcome:
    """What happened when a student's function ran on one case: a value, or an exception's summary."""

    value: Any = None
    error_type: str | None = None
    error_message: str = ""

    @classmethod
    def capture(cls, call: Callable[[], Any]) -> "Outcome":
        try:
            return cls(value=call())
        except Exception as exc:  # the student's code may raise anything
            return cls(error_type=type(exc).__name__, error_message=_short(str(exc)))


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    compare: Callable[[Any, Any], str | None] = describe_mismatch
    function_name: str | None = None  # the name the notebook defines; defaults to reference's
    wants_class: bool = False  # the student provides a class (e.g. an nn.Module), not a function

    @property
    def expected_name(self) -> str:
        return self.function_name or self.reference.__name__

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
                return f"your function's signature is {self.expected_name}{student}; the check calls it like {self.expected_name}{wanted}"
        return None

    def judge(self, case: Case, outcome: Outcome) -> tuple[str, str]:
        """Status and message for one case: (PASSED, ""), (NOT_ATTEMPTED, ...), (FAILED, hint)..."""
        if outcome.error_type == "NotImplementedError":
            return NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE
        if outcome.error_type is not None:
            return ERROR, f"raised {outcome.error_type}: {outcome.error_message} (case: {case.label})"
        expected = self.run(self.reference, case)
        mismatch = self.compare(expected, outcome.value)
        if mismatch is None:
            return PASSED, ""
        for mistake in self.mistakes:
            wrong = Outcome.capture(lambda: self.run(mistake.impl, case))
            if wrong.error_type is None and self.compare(wrong.value, outcome.value) is None:
                return FAILED, f"{mistake.hint} (case: {case.label})"
        for prop in self.properties:
            try:
                holds = bool(prop.holds(case, outcome.value))
            except Exception:
                holds = False
            if not holds:
                return FAILED, f"{prop.hint} (case: {case.label})"
        return FAILED, f"{mismatch} (case: {case.label})"

    def verdict(self, results: Sequence[tuple[str, str]]) -> Verdict:
        """Fold per-case results into one verdict: the first failure wins, else a pass line."""
        for status, message in results:
            if status != PASSED:
                return Verdict(self.name, status, message, len(results))
        return Verdict(self.name, PASSED, f"passed all {len(results)} cases", len(results))

    # -- the in-notebook check -------------------------------------------------------------------
    def check(self, impl: Any, seed: int = 0) -> Verdict:
        """Run the check in this process and return its verdict (shown as one line)."""
        problem = self.validate_impl(impl)
        if problem is not None:
            return Verdict(self.name, ERROR, problem)
        results = []
        for case in self.cases(seed):
            outcome = Outcome.capture(lambda: self.run(impl, case))
            status, message = self.judge(case, outcome)
            results.append((status, message))
            if status != PASSED:
                break
        return self.verdict(results)

