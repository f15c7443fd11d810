"""Reading the course notebooks in tests: their exercises, check cells and outputs."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
CHECK_CALL = re.compile(r"^check_(?P<exercise>\w+)\((?P<argument>\w+)\)\s*$", re.MULTILINE)
# A notebook's stated totals, "**N exercises, P points, about M minutes in all.**" (tests/test_exercise_lines.py
# compares them with the metadata, so tests/test_notebook_numbers.py need not find them printed).
TOTALS_LINE = re.compile(
    r"\*\*(?P<exercises>\d+) exercises?, (?P<points>\d+) points?, about (?P<minutes>\d+) minutes in all\.\*\*"
)


def course_notebooks() -> list[Path]:
    return sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def output_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append(out["text"])
        elif "data" in out and "text/plain" in out["data"]:
            parts.append(out["data"]["text/plain"])
        elif out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "".join(parts)


def check_cells(nb) -> list[tuple[int, str, str]]:
    """(cell index, exercise name, argument) for every `check_<exercise>(<argument>)` line."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for match in CHECK_CALL.finditer(cell.source):
                found.append((index, match.group("exercise"), match.group("argument")))
    return found
