"""Solution regions in notebook code cells, and the student stubs that replace them.

A region is the lines between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` (the spelling nbgrader
and otter-grader both accept). It must sit inside a function or method body, so the stub that
replaces it (``raise NotImplementedError(message)``) only fires when the student's function is called.

The stub's message says what to write and where help is (``hint("<exercise>")``), nothing more: it
never carries the solution. Hints live in the exercise's ``hints`` (``course_utils.checks``), where
``course-lab release`` can prove they do not give the answer away (``lab/release/leaks.py``). Old-style
``# HINT:`` lines inside a region are dropped from the student version like the rest of the region.
"""

from __future__ import annotations

import re

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION\s*$")
END = re.compile(r"^[ \t]*# END SOLUTION\s*$")
HINT = re.compile(r"^[ \t]*# HINT:\s?(?P<text>.*)$")
DEF = re.compile(r"^(?:async\s+)?(?:def|class)\s+(?P<name>\w+)")


def stub_message(function: str | None, exercise: str | None = None) -> str:
    """The stub's text: what to do and where help is.

    ``stub_message("f", "ex")`` -> ``"`f` is yours to write: ..."``.
    """
    what = f"`{function}` is yours to write" if function else "This exercise is yours to write"
    help_ = f"; stuck? run hint({exercise!r}) in a new cell" if exercise else ""
    return f"{what}: replace this line with your code, then run the check cell below{help_}."


class SolutionMarkupError(ValueError):
    """A cell's solution markers do not pair up, or a region sits where a stub cannot go."""


def has_solution(source: str) -> bool:
    return any(BEGIN.match(line) for line in source.splitlines())


def strip_solutions(source: str, where: str = "cell", exercises: dict[str, str] | None = None) -> str:
    """Replace every solution region by a stub:
    ``'def f():\\n    # BEGIN SOLUTION\\n    return 1\\n    # END SOLUTION'``
    -> ``'def f():\\n    raise NotImplementedError(...)'``. Raises ``SolutionMarkupError`` naming ``where``.

    ``exercises`` maps a top-level function or class name to its exercise's name, so the stub can
    point at ``hint("<exercise>")``.
    """
    exercises = exercises or {}
    out: list[str] = []
    region: list[str] | None = None
    indent = ""
    start = 0
    top_level: str | None = None
    for number, line in enumerate(source.splitlines(), start=1):
        defined = DEF.match(line)
        if defined and region is None:
            top_level = defined.group("name")
        begin = BEGIN.match(line)
        if begin:
            if region is not None:
                raise SolutionMarkupError(
                    f"{where}: line {number} opens a solution region inside the one opened at line {start}"
                )
            indent, region, start = begin.group("indent"), [], number
            if not indent:
                raise SolutionMarkupError(
                    f"{where}: the solution region at line {number} is not inside a function body; "
                    "put exercise code in a function so the student stub only runs when called"
                )
            continue
        if END.match(line):
            if region is None:
                raise SolutionMarkupError(f"{where}: line {number} closes a solution region that was never opened")
            message = stub_message(top_level, exercises.get(top_level or ""))
            out.append(f"{indent}raise NotImplementedError({message!r})")
            region = None
            continue
        if region is None:
            out.append(line)
        else:
            region.append(line)
    if region is not None:
        raise SolutionMarkupError(
            f"{where}: the solution region opened at line {start} is never closed with '# END SOLUTION'"
        )
    return "\n".join(out)


def solution_lines(source: str) -> list[str]:
    """The non-blank code lines inside solution regions (used to prove none leak into a release)."""
    lines, inside = [], False
    for line in source.splitlines():
        if BEGIN.match(line):
            inside = True
        elif END.match(line):
            inside = False
        elif inside and line.strip() and not line.lstrip().startswith("#"):
            lines.append(line)
    return lines
