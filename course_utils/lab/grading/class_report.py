"""The class report: for each exercise, how many students passed and how many hit each named
mistake of its bank, so an instructor sees in one look what to re-teach.

``class_counts(results, assignment, registry)`` counts, over each student's counted submission of
each notebook (the best one, ``totals.student_totals``), every exercise's outcome: ``passed``,
each bank mistake by name (``ExerciseResult.mistake``: the misconception the grader recognised, on
a public or a hidden case), ``not attempted``, and ``other`` (a wrong answer no mistake explains,
an exception, a time-out, a reference used...). ``write_class_report(results, out_csv, ...)``
writes them beside the gradebook as ``<stem>_class_report.md`` (a table per exercise, every
mistake of the bank listed, hit or not) and ``<stem>_class_report.png`` (one heatmap, exercises x
outcomes, that fits a screen for the whole course; matplotlib's Agg backend: no display needed).

Leaves out: grading (``grade.py``) and the gradebook itself (``gradebook.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from course_utils.checks.core import Exercise
from course_utils.lab.grading.gradebook import write_atomic
from course_utils.lab.results import SubmissionResult
from course_utils.lab.status import Status
from course_utils.lab.grading.totals import student_totals

PASSED, NOT_ATTEMPTED, OTHER = "passed", "not attempted", "other"


@dataclass
class ExerciseCounts:
    """Outcomes of one exercise over the students who handed in its notebook."""

    exercise: str
    notebook: str
    students: int = 0
    passed: int = 0
    mistakes: dict[str, int] = field(default_factory=dict)  # bank order, every mistake of the bank
    not_attempted: int = 0
    other: int = 0

    def bars(self) -> list[tuple[str, int]]:
        """(label, students) for the chart and the table: passed, each mistake, not attempted, other."""
        return [(PASSED, self.passed), *((f"mistake: {m}", n) for m, n in self.mistakes.items()),
                (NOT_ATTEMPTED, self.not_attempted), (OTHER, self.other)]


def class_counts(
    results: list[SubmissionResult], assignment: dict[str, float], registry: dict[str, Exercise]
) -> list[ExerciseCounts]:
    """One ``ExerciseCounts`` per exercise graded in the assignment, in notebook then exercise order."""
    counts: dict[str, ExerciseCounts] = {}
    for total in student_totals(results, assignment).values():
        for notebook, result in total.best.items():
            for row in result.exercises:
                if not row.exercise:
                    continue
                bank = registry[row.exercise].mistakes if row.exercise in registry else ()
                entry = counts.setdefault(
                    row.exercise, ExerciseCounts(row.exercise, notebook, mistakes={m.name: 0 for m in bank})
                )
                entry.students += 1
                if row.status == Status.OK and row.points == row.max_points > 0:
                    entry.passed += 1
                elif row.mistake in entry.mistakes:
                    entry.mistakes[row.mistake] += 1
                elif row.status == Status.NOT_ATTEMPTED:
                    entry.not_attempted += 1
                else:
                    entry.other += 1
    order = {nb: i for i, nb in enumerate(assignment)}
    return sorted(counts.values(), key=lambda c: order.get(c.notebook, len(order)))


def most_common(c: ExerciseCounts) -> str:
    """The bank mistake most students made (all of a tie); when none matched, says so and how many
    students answered wrongly some other way, so a class where nobody passed never reads "none"."""
    top = max(c.mistakes.values(), default=0)
    if top:
        return ", ".join(f"{m} ({n})" for m, n in c.mistakes.items() if n == top)
    return f"no bank mistake matched ({c.other} wrong in other ways)" if c.other else "none"


def markdown(counts: list[ExerciseCounts]) -> str:
    """The report as Markdown: an overview table, then a table per exercise."""
    lines = ["# Class report", "", "| exercise | notebook | students | passed | most common mistake |"]
    lines.append("|---|---|---|---|---|")
    for c in counts:
        lines.append(f"| `{c.exercise}` | {c.notebook} | {c.students} | {c.passed} | {most_common(c)} |")
    for c in counts:
        lines += ["", f"## `{c.exercise}` ({c.notebook}): {c.passed} of {c.students} passed", ""]
        lines += ["| outcome | students |", "|---|---|"]
        lines += [f"| {label} | {n} |" for label, n in c.bars()]
    return "\n".join(lines) + "\n"


OUTCOMES = (PASSED, "a bank mistake", NOT_ATTEMPTED, OTHER)
MAX_INCHES = (8.0, 10.0)  # at 100 dpi: 800 x 1000 px at most, one screen, however many exercises


def outcome_table(counts: list[ExerciseCounts]) -> list[list[int]]:
    """Students per outcome (``OUTCOMES``), one row per exercise: ``[[passed, mistake, not attempted, other]]``."""
    return [[c.passed, sum(c.mistakes.values()), c.not_attempted, c.other] for c in counts]


def chart(counts: list[ExerciseCounts], path: Path) -> None:
    """One heatmap, exercises x outcomes (share of the exercise's students, the count written in each
    cell), sized to fit a screen (``MAX_INCHES``), saved to ``path`` with Agg."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = max(1, len(counts))
    height = min(MAX_INCHES[1], 1.6 + 0.18 * rows)
    font = max(3.0, min(8.0, 0.6 * 72 * (height - 1.6) / rows))
    fig = Figure(figsize=(MAX_INCHES[0], height))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    table = outcome_table(counts) or [[0] * len(OUTCOMES)]
    shares = [[n / max(1, c.students) for n in row] for c, row in zip(counts, table)] or table
    image = ax.imshow(shares, aspect="auto", cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
    for i, row in enumerate(table):
        for j, n in enumerate(row):
            ax.text(j, i, str(n), ha="center", va="center", fontsize=font,
                    color="white" if shares[i][j] > 0.6 else "black")
    ax.set_xticks(range(len(OUTCOMES)), OUTCOMES, fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(counts)), [f"{c.exercise} ({c.students})" for c in counts], fontsize=font)
    fig.colorbar(image, ax=ax, fraction=0.04, label="share of the exercise's students")
    ax.set_title("students per outcome (count in each cell)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")


def write_class_report(
    results: list[SubmissionResult], out_csv: Path, assignment: dict[str, float], registry: dict[str, Exercise]
) -> tuple[Path, Path]:
    """Write ``<stem>_class_report.md`` and ``.png`` beside ``out_csv``; return their paths."""
    out_csv = Path(out_csv)
    counts = class_counts(results, assignment, registry)
    md = out_csv.with_name(out_csv.stem + "_class_report.md")
    png = md.with_suffix(".png")
    write_atomic(md, lambda handle: handle.write(markdown(counts)))
    tmp = png.with_name(f".{png.name}.tmp")
    try:
        chart(counts, tmp)
        tmp.replace(png)
    finally:
        tmp.unlink(missing_ok=True)
    return md, png
