"""Solution regions in notebook code cells, and the student stubs that replace them.

A region is the lines between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` (the spelling nbgrader
and otter-grader both accept). It must sit inside a function or method body, so the stub that
replaces it (``raise NotImplementedError(hint)``) only fires when the student's function is called.
Lines starting ``# HINT:`` inside a region become the stub's message.
"""

from __future__ import annotations

import re

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION\s*$")
END = re.compile(r"^[ \t]*# END SOLUTION\s*$")
HINT = re.compile(r"^[ \t]*# HINT:\s?(?P<text>.*)$")
DEFAULT_HINT = "Exercise: replace this line with your code, then run the check cell below."


class SolutionMarkupError(ValueError):
    """A cell's solution markers do not pair up, or a region sits where a stub cannot go."""


def has_solution(source: str) -> bool:
    return any(BEGIN.match(line) for line in source.splitlines())


def strip_solutions(source: str, where: str = "cell") -> str:
    """Replace every solution region by a stub: ``'def f():\\n    # BEGIN SOLUTION\\n    return 1\\n    # END SOLUTION'``
    -> ``'def f():\\n    raise NotImplementedError(...)'``. Raises ``SolutionMarkupError`` naming ``where``."""
    out: list[str] = []
    region: list[str] | None = None
    indent = ""
    start = 0
    for number, line in enumerate(source.splitlines(), start=1):
        begin = BEGIN.match(line)
        if begin:
            if region is not None:
                raise SolutionMarkupError(f"{where}: line {number} opens a solution region inside the one opened at line {start}")
            indent, region, start = begin.group("indent"), [], number
            if not indent:
                raise SolutionMarkupError(
                    f"{where}: the solution region at line {number} is not inside a function body; "
                    "put exercise code in a function so the student stub only runs when called")
            continue
        if END.match(line):
            if region is None:
                raise SolutionMarkupError(f"{where}: line {number} closes a solution region that was never opened")
            hints = [m.group("text").strip() for m in map(HINT.match, region) if m]
            message = " ".join(hints) if hints else DEFAULT_HINT
            out.append(f"{indent}raise NotImplementedError({message!r})")
            region = None
            continue
        if region is None:
            out.append(line)
        else:
            region.append(line)
    if region is not None:
        raise SolutionMarkupError(f"{where}: the solution region opened at line {start} is never closed with '# END SOLUTION'")
    return "\n".join(out)


def solution_lines(source: str) -> list[str]:
    """The non-blank lines inside solution regions (used to prove none leak into a release)."""
    lines, inside = [], False
    for line in source.splitlines():
        if BEGIN.match(line):
            inside = True
        elif END.match(line):
            inside = False
        elif inside and line.strip() and not HINT.match(line):
            lines.append(line)
    return lines
