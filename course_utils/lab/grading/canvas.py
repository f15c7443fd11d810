"""The totals as a Canvas gradebook import (``<stem>_canvas.csv``), matched to the class by a roster.

The columns are ``Student, ID, SIS User ID, SIS Login ID, Section``, then one column per notebook of
the assignment (a Canvas assignment each, named by the notebook's file stem), a ``Points Possible``
row first. Canvas matches a row to its student by ``ID`` or ``SIS User ID`` when given, else by
``SIS Login ID``. With a roster (``course-lab grade --roster``: the CSV Canvas's own gradebook export
gives), each student is matched to the roster **by SIS Login ID = the submission folder's name**
(case and surrounding spaces ignored), and the row carries the roster's ``Student``, ``ID``, ``SIS
User ID``, login and ``Section``; students the roster lacks are listed (``CanvasExport.unmatched``).

Canvas's import rules, and a spreadsheet's, both hold: every field is quoted and on one line
(``student_text.one_line``); a name that starts (after
spaces or a tab) with ``=``, ``+``, ``-`` or ``@`` gets a leading apostrophe, but a login never does
(Canvas would not match it): a login that is not plainly safe is left out (the row is matched by
the roster's ID, or not at all, and said so); a student whose name is one of Canvas's own row names
(``Points Possible``, ``Student``) is shown as ``student folder '<name>'`` so it cannot pose as one.

Leaves out: the totals (``totals.py``) and the instructor's own CSV (``gradebook.py``).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.lab.grading.student_text import one_line
from course_utils.lab.grading.totals import StudentTotal

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
SPECIAL_ROWS = frozenset({"points possible", "student"})  # the first column's words Canvas reads specially
FORMULA_START = ("=", "+", "-", "@")
SAFE_LOGIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+-]*")
MATCHED_ON = "SIS Login ID = the submission folder's name (case and spaces ignored)"


def guard(text: str) -> str:
    """A spreadsheet-safe cell: ``' =1+1'`` -> ``"' =1+1"`` (a formula start after spaces or a tab too)."""
    text = str(text)
    return "'" + text if text.lstrip(" \t\r\n")[:1] in FORMULA_START or text[:1] in ("\t", "\r") else text


@dataclass
class CanvasExport:
    """The rows to write (header first) and what the instructor should know about them."""

    rows: list[list[str]]
    unmatched: list[str] = field(default_factory=list)  # students the roster lacks
    unsafe_logins: list[str] = field(default_factory=list)  # logins left out (not plainly safe)

    def notes(self, roster: bool) -> list[str]:
        lines = []
        if roster:
            matched = len(self.rows) - 2 - len(self.unmatched)
            lines.append(f"canvas: matched {matched} of {len(self.rows) - 2} student(s) to the roster by {MATCHED_ON}")
            if self.unmatched:
                lines.append("canvas: not in the roster (rows without ID): " + ", ".join(self.unmatched))
        if self.unsafe_logins:
            lines.append("canvas: login left empty (it would read as a formula or is not a login): "
                         + ", ".join(map(repr, self.unsafe_logins)))
        return lines


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """``{login (lower case): {column: value}}`` from Canvas's gradebook export; ``ValueError`` if it is
    not one (no ``SIS Login ID`` column). Canvas's ``Points Possible`` row is skipped."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"roster must be a readable CSV, got {path} ({type(exc).__name__}: {exc})") from exc
    if not rows or "SIS Login ID" not in rows[0]:
        raise ValueError(f"roster must be Canvas's gradebook export with a 'SIS Login ID' column, got {path}")
    roster = {}
    for row in rows:
        name, login = (row.get("Student") or "").strip(), (row.get("SIS Login ID") or "").strip()
        if login and name.lower() not in SPECIAL_ROWS:
            roster[login.lower()] = {k: (row.get(k) or "").strip() for k in CANVAS_COLUMNS}
    return roster


def canvas_export(
    totals: dict[str, StudentTotal], assignment: dict[str, float], roster: dict[str, dict[str, str]] | None = None
) -> CanvasExport:
    """The Canvas CSV's rows for ``totals``, one column per assignment notebook, matched to ``roster``."""
    stems = [nb.removesuffix(".ipynb") for nb in assignment]
    possible = ["Points Possible", "", "", "", ""] + [f"{p:g}" for p in assignment.values()]
    export = CanvasExport([CANVAS_COLUMNS + stems, possible])
    for total in totals.values():
        found = (roster or {}).get(total.student.strip().lower())
        if roster is not None and found is None:
            export.unmatched.append(total.student)
        person = found or {**dict.fromkeys(CANVAS_COLUMNS, ""), "Student": total.student, "SIS Login ID": total.student}
        person = {k: one_line(v) for k, v in person.items()}  # no line breaks or control characters
        name = person["Student"]
        if name.strip().lower() in SPECIAL_ROWS:
            name = f"student folder '{name}'"
        login = person["SIS Login ID"]
        if login and not SAFE_LOGIN.fullmatch(login):
            export.unsafe_logins.append(login)
            login = ""
        cells = [guard(name), guard(person["ID"]), guard(person["SIS User ID"]), login, guard(person["Section"])]
        export.rows.append(cells + [f"{total.scores[nb]:g}" for nb in assignment])
    return export


def write_canvas(path: Path, export: CanvasExport, write_atomic) -> None:
    """Write the rows with every field quoted (Canvas reads quoted fields as they are)."""
    write_atomic(path, lambda handle: csv.writer(handle, quoting=csv.QUOTE_ALL).writerows(export.rows))
