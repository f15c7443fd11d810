"""Tell which course notebook a submission is: by file name, else by the exercises its metadata
names, else by the functions and classes its code defines.

Runs in the grader's main process before any worker starts, on files a student wrote, so every step
costs time linear in the file and is bounded: a code cell is parsed with ``ast`` (its ``def`` and
``class`` statements at any depth), a cell ``ast`` cannot read (IPython magics, a syntax error, one
larger than ``AST_CELL_CHARS``) is scanned line by line (a line that starts, after indentation, with
``def NAME`` / ``class NAME``), and the whole search stops after ``MAX_IDENTIFY_CHARS`` of code or
``IDENTIFY_SECONDS`` (what was found by then decides). Metadata of any shape is read without
raising: ``course`` or ``exercises`` that is not a mapping names nothing.

``defined_names(nb)`` -> ``{'stable_softmax', 'Head'}``; ``identify(sub, nb, catalog)`` -> the
catalog's name or ``None``.

Leaves out: finding and reading the files (``submissions.py``).
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Mapping

from course_utils.lab.grading.submissions import CourseNotebook, Submission

AST_CELL_CHARS = 200_000  # a larger cell is scanned by lines (ast's memory grows with the tree)
MAX_IDENTIFY_CHARS = 8 << 20  # code looked at per file; a course notebook has ~100 KB
IDENTIFY_SECONDS = 5.0  # per file, checked between cells and every LINE_BATCH lines
LINE_BATCH = 10_000
_DEF_LINE = re.compile(r"[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)")  # one line, anchored


def _parsed_names(source: str) -> set[str] | None:
    """Names of every ``def``/``class`` in ``source``, or ``None`` when ``ast`` cannot read it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {node.name for node in ast.walk(tree) if isinstance(node, kinds)}


def _scanned_names(source: str, deadline: float) -> set[str]:
    """Names on lines that start with ``def``/``class`` (after indentation), one line at a time."""
    found = set()
    for number, line in enumerate(source.splitlines()):
        if number % LINE_BATCH == 0 and time.monotonic() > deadline:
            break
        match = _DEF_LINE.match(line)
        if match:
            found.add(match.group(1))
    return found


def defined_names(nb, seconds: float = IDENTIFY_SECONDS, max_chars: int = MAX_IDENTIFY_CHARS) -> set[str]:
    """Every function and class name the notebook's code cells define, within the bounds."""
    deadline, budget, found = time.monotonic() + seconds, max_chars, set()
    for cell in nb.get("cells", []) if isinstance(nb, Mapping) else ():
        if not isinstance(cell, Mapping) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source")
        if not isinstance(source, str) or ("def" not in source and "class" not in source):
            continue
        if budget <= 0 or time.monotonic() > deadline:
            break
        source = source[:budget]
        budget -= len(source)
        names = _parsed_names(source) if len(source) <= AST_CELL_CHARS else None
        found |= names if names is not None else _scanned_names(source, deadline)
    return found


def claimed_exercises(nb) -> set[str]:
    """The exercise names ``metadata.course.exercises`` lists (its keys), whatever shape the metadata has."""
    metadata = nb.get("metadata") if isinstance(nb, Mapping) else None
    course = metadata.get("course") if isinstance(metadata, Mapping) else None
    exercises = course.get("exercises") if isinstance(course, Mapping) else None
    if isinstance(exercises, Mapping):
        return {name for name in exercises if isinstance(name, str)}
    return set()


def identify(sub: Submission, nb, catalog: dict[str, CourseNotebook]) -> str | None:
    """The course notebook ``sub`` is a copy of, or ``None``: by file name, then metadata, then code."""
    if sub.path.name in catalog:
        return sub.path.name
    if nb is None:
        return None
    claimed = claimed_exercises(nb)
    by_metadata = [name for name, entry in catalog.items() if claimed and set(entry.points) == claimed]
    if len(by_metadata) == 1:
        return by_metadata[0]
    defined = defined_names(nb)
    by_code = [name for name, entry in catalog.items() if entry.functions and entry.functions <= defined]
    return by_code[0] if len(by_code) == 1 else None
