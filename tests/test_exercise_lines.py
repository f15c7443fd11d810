"""How much code a student writes, counted from the solution notebooks, and the README's table of it.

A solution line is a non-blank line between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` that is not a
comment. An exercise's lines are those of the solution regions since the previous exercise's check
cell, up to its own ``check_<exercise>(...)`` call (an exercise may have several regions: a class's
methods). The README's table of notebooks shows each notebook's total in its "lines you write"
column, and the line under the table the course's total and the median per exercise; these tests
fail when either drifts from the notebooks. Issue #25's floor holds: at least 600 lines in all, a median of
at least 6 per exercise and at least 150 in notebooks 09-11 (the student's own GPT). A notebook whose top states its totals
(``**N exercises, P points, about M minutes in all.**``) must state its metadata's.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from notebook_tools import CHECK_CALL, TOTALS_LINE, course_notebooks, read

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| `(?P<notebook>\d\d_\w+)` \|.*\| (?P<lines>\d+) \| [^|]+\|$", re.M)
TOTALS = re.compile(
    r"writes \*\*(?P<total>\d+) lines\*\* of code.*?median of \*\*(?P<median>[\d.]+)\*\* per exercise", re.S
)


def solution_lines(source: str) -> int:
    """Non-blank, non-comment lines inside the solution regions of one cell's source."""
    count, inside = 0, False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == "# BEGIN SOLUTION":
            inside = True
        elif stripped == "# END SOLUTION":
            inside = False
        elif inside and stripped and not stripped.startswith("#"):
            count += 1
    return count


def test_solution_lines_counts_code_only():
    source = (
        "def f(x):\n    # BEGIN SOLUTION\n    # a comment\n\n    y = x + 1\n    return y  # shape (n,)\n"
        "    # END SOLUTION\n"
    )
    assert solution_lines(source) == 2
    assert solution_lines("x = 1\n") == 0


def exercise_lines(path: Path) -> dict[str, int]:
    """{exercise: its solution lines}, in notebook order, for one solution notebook."""
    nb = read(path)
    exercises = nb.metadata.get("course", {}).get("exercises", {})
    counts, pending = {}, 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        pending += solution_lines(cell.source)
        for match in CHECK_CALL.finditer(cell.source):
            if match.group("exercise") in exercises:
                counts[match.group("exercise")], pending = counts.get(match.group("exercise"), 0) + pending, 0
    assert pending == 0, f"{path.stem}: solution lines after the last check cell belong to no exercise"
    assert sorted(counts) == sorted(exercises), f"{path.stem}: exercises without a check cell"
    return counts


def _course_counts() -> dict[str, dict[str, int]]:
    return {path.stem: exercise_lines(path) for path in course_notebooks()}


def test_the_readme_table_shows_the_lines_students_write():
    counts = _course_counts()
    totals = {name: sum(per.values()) for name, per in counts.items()}
    every = [n for per in counts.values() for n in per.values()]
    median = statistics.median(every)
    for name, per in counts.items():
        print(f"{name:<32} {len(per):>2} exercises {totals[name]:>4} lines  {per}")
    print(f"course: {sum(every)} lines in {len(every)} exercises, median {median:g}")
    readme = (ROOT / "README.md").read_text()
    rows = {m["notebook"]: int(m["lines"]) for m in ROW.finditer(readme)}
    assert rows == totals, f"README's 'lines you write' column should read {totals}"
    match = TOTALS.search(readme)
    assert match, "README lost its line 'a student writes **N lines** of code ... median of **M** per exercise'"
    assert (int(match["total"]), float(match["median"])) == (sum(every), median), (
        f"README's totals line should say {sum(every)} lines and a median of {median:g}"
    )


def test_students_write_the_whole_build():
    """Issue #25: students write at least 600 lines, a median of at least 6 per exercise, 150 in notebooks 09-11 (the GPT)."""
    counts = _course_counts()
    every = [n for per in counts.values() for n in per.values()]
    assert sum(every) >= 600, f"students write {sum(every)} lines in all"
    assert statistics.median(every) >= 6, f"median {statistics.median(every)} lines per exercise"
    own_gpt = sum(sum(counts[nb].values()) for nb in ("09_build_gpt", "10_train_gpt", "11_generate_gpt"))
    assert own_gpt >= 150, f"notebooks 09-11: {own_gpt} lines"


def test_every_notebook_top_states_its_own_totals():
    """Issue #25: the top of each notebook with exercises says how many, their points and minutes, as its metadata."""
    for path in course_notebooks():
        nb = read(path)
        exercises = nb.metadata.get("course", {}).get("exercises", {})
        if not exercises:
            continue
        stated = [TOTALS_LINE.search(cell.source) for cell in nb.cells[:3] if cell.cell_type == "markdown"]
        stated = [match for match in stated if match]
        assert len(stated) == 1, f"{path.stem}: its top should say '**N exercises, P points, about M minutes in all.**'"
        wanted = (
            len(exercises),
            sum(e["points"] for e in exercises.values()),
            sum(e["minutes"] for e in exercises.values()),
        )
        match = stated[0]
        assert (int(match["exercises"]), int(match["points"]), int(match["minutes"])) == wanted, path.stem


SITTING_MINUTES = 130  # "at most about two hours" of stated exercise time (issue #40): 09 alone was 275


def test_no_notebook_asks_for_more_than_one_sitting():
    """Issue #40: a notebook is one sitting, so its exercises' stated minutes add up to about two hours at most."""
    over = {}
    for path in course_notebooks():
        minutes = sum(e["minutes"] for e in read(path).metadata.get("course", {}).get("exercises", {}).values())
        if minutes > SITTING_MINUTES:
            over[path.name] = minutes
    assert not over, f"more than {SITTING_MINUTES} minutes of exercises: {over} (split the notebook at a seam)"
