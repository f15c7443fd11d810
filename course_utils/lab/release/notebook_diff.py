"""``course-lab diff NN``: what the course changed in a notebook, next to the student's copy of it.

When ``course-lab update`` puts a new version beside a notebook the student changed
(``NN_topic.updated.ipynb``, see ``workspace.py``), this prints how the two differ, cell by cell:
the cells' sources only (outputs, metadata and execution counts are left out), lines removed from
the student's copy marked ``-``, lines in the new version ``+``, as ``diff -u`` does::

    cell 4 (markdown) differs:
    -Attention weighs the values.
    +Attention weighs the values by how well each key matches the query.

Cells are matched by content (``difflib.SequenceMatcher`` over the cells), so a cell the course
inserted shows as added, not as every later cell changed.

Leaves out: merging. The student carries over what they want by hand (or with nbdime, if installed).
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import nbformat

from course_utils.lab.release.workspace import waiting_beside, find_notebook, student_notebooks


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in nb.cells]


def _block(prefix: str, what: str, index: int, cell: tuple[str, str]) -> list[str]:
    return [f"cell {index + 1} ({cell[0]}) {what}:", *(prefix + line for line in cell[1].splitlines())]


def diff_cells(theirs: nbformat.NotebookNode, new: nbformat.NotebookNode) -> list[str]:
    """The lines that tell ``theirs`` from ``new``, cell by cell (empty when their cells are the same).
    Cell numbers count from 1: the student's own for a removed or changed cell, the new version's for an
    added one."""
    a, b = _cells(theirs), _cells(new)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(pairs):
            old_cell, new_cell = a[i1 + k], b[j1 + k]
            lines = difflib.unified_diff(old_cell[1].splitlines(), new_cell[1].splitlines(), lineterm="", n=1)
            kind = old_cell[0] if old_cell[0] == new_cell[0] else f"{old_cell[0]} -> {new_cell[0]}"
            out += [f"cell {i1 + k + 1} ({kind}) differs:", *list(lines)[2:]]  # no ---/+++ file header
        for i in range(i1 + pairs, i2):
            out += _block("-", "only in your copy", i, a[i])
        for j in range(j1 + pairs, j2):
            out += _block("+", "new in the course's version", j, b[j])
    return out


def diff_command(folder: Path, query: str) -> list[str]:
    """The report for ``course-lab diff query``: the student's notebook against the newest version beside it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"folder {folder} does not exist: run `make lab` (or `course-lab update`) first")
    name = find_notebook(student_notebooks(folder), query)
    waiting = waiting_beside(folder, name)
    if not waiting:
        return [f"No new version of {name} is waiting beside it in {folder}: nothing to compare."]
    theirs, new = folder / name, folder / waiting[-1]
    lines = diff_cells(nbformat.read(str(theirs), as_version=4), nbformat.read(str(new), as_version=4))
    head = [f"--- {theirs} (yours)", f"+++ {new} (the course's new version)"]
    return head + (lines or ["Their cells are the same (only outputs or metadata differ)."])


def add_command(commands) -> None:
    """``course-lab diff NN [--folder notebooks/student]``."""
    cmd = commands.add_parser("diff", help="show what the course changed in a notebook (its .updated version)")
    cmd.add_argument("notebook", help="the notebook: 03, 03_attention or 03_attention.ipynb")
    cmd.add_argument("--folder", default="notebooks/student", help="your copy (default: notebooks/student)")
    cmd.set_defaults(func=_cmd_diff)


def _cmd_diff(args) -> int:
    try:
        lines = diff_command(Path(args.folder), args.notebook)
    except (ValueError, OSError) as exc:
        print(f"course-lab diff: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0
