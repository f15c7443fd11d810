"""What happened when a student's function ran on one case, told in one line.

``Outcome.capture(call)`` runs a call and keeps either its value or a summary of the exception it
raised: the type, a shortened message, and the line of the *student's* code that raised it (frames
in torch, the standard library, site-packages and ``course_utils`` are skipped, so the line points at
their cell). ``describe_error`` adds a fix for the commonest errors (``error_hint``): a ``.view`` on
a transposed tensor, shapes that do not multiply or broadcast, mixed dtypes or devices.

``passed_line(cases, seed)`` is what a passing check says. On the public cases (seed 0, the check a
notebook runs) it never says "all passed": the grader also runs ``HIDDEN_SEEDS`` (each exercise's
cases on other seeds, as many per seed), so it says how many hidden cases remain to be graded.

Leaves out: judging the value (``core.Exercise.judge``) and comparing tensors (``compare``).
"""

from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass
from typing import Any, Callable

# Common exceptions in student code, and what usually fixes them (first match wins).
ERROR_HINTS: tuple[tuple[str, str], ...] = (
    (
        r"view size is not compatible|not compatible with input tensor's size and stride",
        "`.view` needs contiguous memory (a transposed tensor is not): use `.reshape(...)` instead",
    ),
    (
        r"mat1 and mat2 shapes cannot be multiplied|size mismatch|shapes cannot be multiplied",
        "the shapes do not line up for this matrix product: print each operand's `.shape`; is a transpose missing?",
    ),
    (
        r"must match the size of tensor|The size of tensor a|cannot broadcast|not broadcastable",
        "two shapes do not broadcast: print the `.shape` of each operand (keepdim=True keeps a reduced axis)",
    ),
    (
        r"expected scalar type|expected m1 and m2 to have the same dtype|dtype",
        "two tensors have different dtypes: build new tensors with the input's dtype (dtype=x.dtype)",
    ),
    (
        r"Expected all tensors to be on the same device|on the same device",
        "tensors are on different devices: create new tensors with device=x.device",
    ),
    (
        r"Dimension out of range|dimension out of range|out of range \(expected to be in range",
        "a `dim` index is out of range: count the input's dimensions (x.ndim); negative dims count from the end",
    ),
    (
        r"is not defined",
        "a name is not defined inside your function: define it there, or pass it in "
        "(a variable from another cell may not exist)",
    ),
    (
        r"does not require grad|element 0 of tensors does not require grad",
        "the tensor you differentiate was detached from the graph: "
        "keep the computation in torch, no `.item()` or `.detach()`",
    ),
)

# The seeds of the grader's hidden cases: a public check announces them ("8 hidden cases remain") and
# `course-lab grade` runs them unless told other seeds (--hidden-seeds). The checks own the number; the
# grader reads it here when it grades, so `course-lab` itself starts without importing the checks.
HIDDEN_SEEDS = (1, 2)


def passed_line(cases: int, seed: int = 0) -> str:
    """``passed_line(4)`` -> ``'passed the 4 public cases; 8 hidden cases remain to be graded'``;
    on a hidden seed, ``passed_line(4, seed=1)`` -> ``'passed all 4 cases'``."""
    if seed != 0:
        return f"passed all {cases} cases"
    return f"passed the {cases} public cases; {cases * len(HIDDEN_SEEDS)} hidden cases remain to be graded"


_STDLIB_DIR = os.path.dirname(os.path.abspath(inspect.__file__))
_COURSE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def error_hint(message: str) -> str:
    """A fix for a common error: ``error_hint("view size is not compatible ...")`` -> ``'`.view` needs ...'``."""
    for pattern, hint in ERROR_HINTS:
        if re.search(pattern, message):
            return hint
    return ""


def student_line(tb) -> tuple[int | None, str | None]:
    """(line number, function name) of the innermost traceback frame in the student's own code.

    Frames in torch, the standard library, site-packages and ``course_utils`` itself do not count;
    in a notebook the line number is the line within the cell that defines the function.
    """
    found: tuple[int | None, str | None] = (None, None)
    while tb is not None:
        filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
        library = (
            "site-packages" in filename
            or filename.startswith((_STDLIB_DIR, _COURSE_DIR))
            or filename.startswith("<frozen")
        )
        if not library:
            found = (tb.tb_lineno, tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return found


@dataclass(frozen=True)
class Outcome:
    """What happened when a student's function ran on one case: a value, or an exception's summary."""

    value: Any = None
    error_type: str | None = None
    error_message: str = ""
    error_line: int | None = None  # the line of the student's code that raised, when known
    error_function: str | None = None
    mutated: tuple[str, ...] = ()  # the inputs the student's function changed in place

    @classmethod
    def capture(cls, call: Callable[[], Any]) -> "Outcome":
        try:
            return cls(value=call())
        except Exception as exc:  # the student's code may raise anything
            line, function = student_line(exc.__traceback__)
            return cls(
                error_type=type(exc).__name__, error_message=_short(str(exc)), error_line=line, error_function=function
            )

    def describe_error(self) -> str:
        """One line: ``raised ValueError in `f`, line 3: boom — hint: ...``."""
        where = ""
        if self.error_line is not None:
            where = (
                f" in `{self.error_function}`, line {self.error_line} of its cell"
                if self.error_function
                else f" at line {self.error_line}"
            )
        hint = error_hint(self.error_message)
        return f"raised {self.error_type}{where}: {self.error_message}" + (f" — hint: {hint}" if hint else "")


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
