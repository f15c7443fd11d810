"""Find the submissions in a folder, read them, and tell which course notebook each one is.

A submissions folder holds ``<student>/<notebook>.ipynb`` (any depth below the student's folder)
and/or ``<student>.ipynb`` files. Every file is a submission, dot-names included, so a stray
``.txt`` or an empty file still gets a row (status ``unreadable``); only editor and OS leftovers
(``.ipynb_checkpoints``, ``__pycache__``, ``.DS_Store``) and empty folders are skipped, each with a
warning line. Symbolic links are never followed out of the folder: a link to outside it, or to
another student's file, is a row with status ``link`` (not graded); a link within the student's
own folder is graded as the file it points to. Pipes, sockets and devices are ``unreadable``.
Student names that look the same once made safe (invisible characters dropped) are made distinct,
with a warning (``distinct_students``). A file is read only up to ``MAX_NOTEBOOK_BYTES`` and its JSON
only if it nests at most ``MAX_JSON_DEPTH`` levels (``limits.py``): anything else is ``unreadable``.
nbformat 3 notebooks are upgraded to version 4 and graded.

Which course notebook a submission is (by file name, metadata or the functions it defines) is
told by ``identify.py``, in bounded time. Points always
come from the course's own notebooks (the ``--source`` folder), never from the submission, whose
metadata a student can edit.

Leaves out: identifying (``identify.py``), running and grading (``grade.py``, ``folder.py``).
"""

from __future__ import annotations

import os
import stat
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat

from course_utils.checks import all_exercises
from course_utils.lab.grading.bounded import loads_bounded
from course_utils.lab.grading.cells import course_cells
from course_utils.lab.grading.student_text import one_line
from course_utils.lab.limits import MAX_JSON_DEPTH, MAX_NOTEBOOK_BYTES
from course_utils.lab.status import Status


@dataclass(frozen=True)
class Submission:
    """One submitted file: ``Submission('alice', Path('subs/alice/00_welcome.ipynb'), 'alice/00_welcome.ipynb')``."""

    student: str
    path: Path
    rel: str
    status: str = ""  # set when the entry cannot be graded: LINK or UNREADABLE
    problem: str = ""


@dataclass(frozen=True)
class CourseNotebook:
    """A course notebook's name, its exercises' points, the names its exercises define, the time its
    longest cell needs in a grader's kernel (0: the grader's ``--timeout`` is enough), and the digests of
    its course cells (``cells.course_cells``: cells no student writes, an error in which is the course's)."""

    name: str
    points: dict
    functions: frozenset
    cell_seconds: float = 0.0
    course_cells: frozenset = frozenset()


def default_source() -> Path:
    """The course's solution notebooks next to the installed package (``<repo>/notebooks``)."""
    import course_utils

    return Path(course_utils.__file__).resolve().parents[1] / "notebooks"


def course_catalog(source: Path) -> dict[str, CourseNotebook]:
    """``{'00_welcome.ipynb': CourseNotebook(...)}`` for every notebook in ``source`` with exercises."""
    source = Path(source)
    if not source.is_dir():
        raise ValueError(f"source must be the folder of course notebooks, got {source} (not a folder)")
    registry = all_exercises()
    catalog = {}
    for path in sorted(source.glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        exercises = nb.metadata.get("course", {}).get("exercises", {})
        points = {name: float(spec.get("points", 1)) for name, spec in exercises.items()}
        names = frozenset(registry[e].expected_name for e in points if e in registry)
        seconds = nb.metadata.get("course", {}).get("grading_cell_timeout_s", 0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= 3600:
            raise ValueError(
                f"{path.name}: course.grading_cell_timeout_s must be seconds in [0, 3600], got {seconds!r}"
            )
        catalog[path.name] = CourseNotebook(path.name, points, names, float(seconds), course_cells(nb, names))
    if not catalog:
        raise ValueError(f"source {source} holds no .ipynb notebooks")
    return catalog


LEFTOVERS = frozenset({".ipynb_checkpoints", "__pycache__", ".DS_Store", ".Trash", "Thumbs.db"})


def _entry(folder: Path, student: str, path: Path) -> Submission | None:
    """The submission for a file, link or special file; ``None`` for a folder to walk into."""
    rel = path.relative_to(folder).as_posix()
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        root = Path(os.path.realpath(folder))
        if root not in target.parents:
            return Submission(
                student, path, rel, Status.LINK, "a symbolic link to outside the submissions folder (not followed)"
            )
        owner = target.relative_to(root).parts[0]
        if owner != student and Path(owner).stem != student:
            return Submission(
                student,
                path,
                rel,
                Status.LINK,
                f"a link to another student's file ({target.relative_to(root).as_posix()}); not graded",
            )
        if target.is_dir():
            return Submission(student, path, rel, Status.LINK, "a link to a folder (not followed)")
        return Submission(student, target, rel)
    mode = path.lstat().st_mode
    if stat.S_ISDIR(mode):
        return None
    if not stat.S_ISREG(mode):
        return Submission(student, path, rel, Status.UNREADABLE, "not a regular file (a pipe, socket or device)")
    return Submission(student, path, rel)


def find_submissions(folder: Path, warnings: list[str] | None = None) -> list[Submission]:
    """Every submission under ``folder``, sorted by path; ``ValueError`` if the folder is missing.

    What is skipped is said in ``warnings`` (if given), one line each."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"submissions must be a folder, got {folder} (no such folder)")
    warnings = [] if warnings is None else warnings
    found = []

    def walk(student: str, here: Path) -> int:
        count = 0
        for path in sorted(here.iterdir()):
            rel = path.relative_to(folder).as_posix()
            if path.name in LEFTOVERS:
                warnings.append(f"skipped {rel} (editor or OS leftovers)")
                continue
            sub = _entry(folder, student, path)
            if sub is None:
                inside = walk(student, path)
                if inside == 0:
                    warnings.append(f"skipped {rel}/ (an empty folder: no submission)")
                count += inside
            else:
                found.append(sub)
                count += 1
        return count

    for entry in sorted(folder.iterdir()):
        if entry.name in LEFTOVERS:
            warnings.append(f"skipped {entry.name} (editor or OS leftovers)")
            continue
        student = entry.stem if entry.suffix == ".ipynb" and not entry.is_dir() else entry.name
        sub = _entry(folder, student, entry)
        if sub is not None:
            found.append(sub)
        elif walk(entry.name, entry) == 0:
            warnings.append(f"skipped {entry.name}/ (an empty folder: no submission)")
    return distinct_students(found, warnings)


def distinct_students(found: list[Submission], warnings: list[str]) -> list[Submission]:
    """``found`` with every student name distinct as the gradebook shows it (``student_text.one_line``
    drops invisible characters, NFC joins accents): of names that differ only there, the first in
    order keeps its name, the others get `` (2)``, `` (3)``..., with a warning naming them all.
    ``ann`` and ``ann\u200b`` -> ``ann`` and ``ann (2)``."""
    def shown(name: str) -> str:
        return unicodedata.normalize("NFC", one_line(name))

    names = sorted({sub.student for sub in found}, key=lambda n: (shown(n) != n, n))
    taken = {shown(n) for n in names}
    by_shown: dict[str, list[str]] = {}
    for name in names:
        by_shown.setdefault(shown(name), []).append(name)
    renamed = {}
    for seen, group in sorted(by_shown.items()):
        for name in group[1:]:
            number = 2
            while f"{seen} ({number})" in taken:
                number += 1
            renamed[name] = f"{seen} ({number})"
            taken.add(renamed[name])
        if len(group) > 1:
            graded = ", ".join(f"{ascii(n)} as {renamed.get(n, n)!r}" for n in group)
            why = "they differ only by invisible characters or how an accent is encoded"
            warnings.append(f"student names that look the same ({why}): graded {graded}")
    return [replace(sub, student=renamed[sub.student]) if sub.student in renamed else sub for sub in found]


def read_submission(path: Path) -> tuple[nbformat.NotebookNode | None, str]:
    """(notebook, "") or (None, why it cannot be read): empty, too large, invalid JSON, not a notebook."""
    try:
        size = path.lstat().st_size
        if size == 0:
            return None, "empty file"
        if size > MAX_NOTEBOOK_BYTES:
            return None, f"file too large ({size:,} bytes)"
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read file ({type(exc).__name__}: {exc})"[:200]
    try:
        data = loads_bounded(text, MAX_JSON_DEPTH)  # a refused depth or size costs one scan, never the run
    except ValueError as exc:
        return None, f"invalid JSON ({exc})"[:200]
    old_format = isinstance(data, dict) and data.get("nbformat") == 3 and isinstance(data.get("worksheets"), list)
    if not isinstance(data, dict) or not (isinstance(data.get("cells"), list) or old_format):
        return None, "not a notebook (JSON without a list of cells)"
    try:
        nb = nbformat.reads(text, as_version=4)
        for cell in nb.cells:
            if cell.get("cell_type") not in ("code", "markdown", "raw") or not isinstance(cell.get("source"), str):
                return None, "not a notebook (a cell without a type or source)"
    except Exception as exc:  # nbformat raises several unrelated types for bad input
        return None, f"not a notebook ({type(exc).__name__}: {str(exc)[:150]})"
    return nb, ""
