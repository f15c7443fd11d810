"""The feedback policy: what a student sees of a failed test, and the problems a feedback file lists.

Hidden cases stay hidden. A failure on a public case (``cases(0)``, which the notebook's own check
shows) is told in full, as the check tells it. A failure on a hidden case (another seed, or an
instructor test) says only ``hidden case k of n failed``, with the hint of the bank mistake or
property the answer matched, or, for an exception, words from a fixed vocabulary only (the
exercise's function name, a built-in exception's type, the generic fix for that kind of error), never
a string or number the student's code chose: not its message, type name, function name or line. The full
text (case label, message, expected values) goes to ``ExerciseResult.detail``: the instructor's
gradebook shows it, and the student's feedback file does only with ``--release-hidden``.

``problems(result)`` names what went wrong in one submission (cells that raised or ran out of
time, exercises not graded normally), from its data (statuses, ``CellProblem`` kinds), never from
its text; the feedback file lists exactly these, and the summary counts them (``summary_line``), so
the two always agree. ``describe_cell`` is where a cell problem becomes text; cell numbers count
every cell from 1, top to bottom, as JupyterLab's status bar does.

Leaves out: running the tests (``grade.py``) and writing the files (``gradebook.py``).
"""

from __future__ import annotations

import builtins

from course_utils.checks.outcome import Outcome, error_hint
from course_utils.lab.results import CellProblem, SubmissionResult
from course_utils.lab.status import Status

CELL_KINDS = {  # a CellProblem's kind (``results.CELL_KINDS``) -> the problem it is, as listed and counted
    "error": "cell error",
    "course_error": "course cell error",  # a cell as the course wrote it raised: the course's, not the student's
    "timeout": "cell timeout",
    "total_timeout": "total time limit",
    "output_truncated": "output truncated",
    "kernel_died": "kernel died",
}
HIDDEN_RAISE = "its message and line are not shown for a hidden case"
# the names a hidden case's exception may be told by: Python's own, never one a notebook made
BUILTIN_ERRORS = frozenset(
    name for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, BaseException)
)


def describe_cell(problem: CellProblem) -> str:
    """``CellProblem(4, 'error', 'NameError: x')`` (index 4 of ``nb.cells``) -> ``'cell 5: error: NameError: x'``."""
    return f"cell {problem.index + 1}: {problem.kind.replace('_', ' ')}: {problem.detail}"


def problems(result: SubmissionResult) -> list[str]:
    """What went wrong in ``result``, each named once, sorted: ``['cell error', 'timeout']``.

    Every exercise status other than ``ok`` and ``not_attempted`` counts (a wrong answer is ``ok``: graded), and
    the kind of every cell problem (``result.cells``)."""
    graded = (Status.OK, Status.NOT_ATTEMPTED)  # an answer, right, wrong or not yet written: no problem of the run
    found = {str(e.status).replace("_", " ") for e in result.exercises if e.status not in graded}
    found |= {CELL_KINDS[problem.kind] for problem in result.cells}
    return sorted(found)


def hidden_failure(k: int, n: int, hint: str = "", outcome: Outcome | None = None, function: str = "") -> str:
    """``'hidden case 3 of 8 failed: subtract each row's maximum'``: no input, value or message shown.

    With an ``outcome`` that raised, only words from a fixed vocabulary: the exercise's ``function``
    name, the exception's type if it is one of Python's built-in exceptions (else "an exception"), and
    the generic fix for that kind of error (``error_hint``, a fixed table). Never the line, the name of
    the function that raised or a type name, which the student's code chooses (``code.replace``, a
    class made at run time) and could spell the hidden inputs with."""
    text = f"hidden case {k} of {n} failed"
    if outcome is not None and outcome.error_type is not None:
        kind = outcome.error_type if outcome.error_type in BUILTIN_ERRORS else "an exception"
        who = f"`{function}`" if function.isidentifier() else "your function"
        fix = error_hint(outcome.error_message)
        return f"{text}: {who} raised {kind} ({HIDDEN_RAISE})" + (f" — hint: {fix}" if fix else "")
    return text + (f": {hint}" if hint else "")
