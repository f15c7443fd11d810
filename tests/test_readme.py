"""The README's table of notebooks says what the notebooks hold: one row per notebook, each row's
exercise count equal to the notebook's metadata, and the totals line equal to their sums."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _exercises(path: Path) -> dict:
    return json.loads(path.read_text())["metadata"].get("course", {}).get("exercises", {})


def _rows() -> dict[str, str]:
    rows = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        match = re.match(r"\| `(\d\d_\w+)` \|.*\| (\d+)[^|]*\|$", line)
        if match:
            rows[match.group(1)] = int(match.group(2))
    return rows


def test_every_notebook_has_a_row_with_its_exercise_count():
    rows = _rows()
    assert sorted(rows) == [p.stem for p in NOTEBOOKS]
    for path in NOTEBOOKS:
        assert rows[path.stem] == len(_exercises(path)), path.stem


def test_the_totals_line_matches_the_notebooks():
    text = (ROOT / "README.md").read_text()
    match = re.search(r"(\w+) notebooks, (\d+) graded exercises \((\d+) points\)", text)
    assert match, "README lost its 'N notebooks, E graded exercises (P points)' line"
    words = {"Ten": 10, "Eleven": 11, "Twelve": 12, "Thirteen": 13, "Fourteen": 14, "Fifteen": 15}
    exercises = [_exercises(p) for p in NOTEBOOKS]
    assert words.get(match.group(1)) == len(NOTEBOOKS)
    assert int(match.group(2)) == sum(len(e) for e in exercises)
    assert int(match.group(3)) == sum(v["points"] for e in exercises for v in e.values())
