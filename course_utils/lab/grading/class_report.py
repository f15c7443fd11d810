"""The class report: for each exercise, how many students passed and how many hit each named
mistake of its bank, so an instructor sees in one look what to re-teach.

``class_counts(results, assignment, registry)`` counts, over each student's counted submission of
each notebook (the best one, ``totals.student_totals``), every exercise's outcome: ``passed``,
each bank mistake by name (``ExerciseResult.mistake``: the misconception the grader recognised, on
a public or a hidden case), ``not attempted``, and ``other`` (a wrong answer no mistake explains,
an exception, a time-out, a reference used...). ``write_class_report(results, out_csv, ...)``
writes them beside the gradebook as ``<stem>_class_report.md`` (a table per exercise, every
mistake of the bank listed, hit or not) and ``<stem>_class_report.png`` (a bar chart per exercise,
matplotlib's Agg backend: no display needed).

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
                elif row.status == Status.OK and row.feedback == "not attempted":
                    entry.not_attempted += 1
                else:
                    entry.other += 1
    order = {nb: i for i, nb in enumerate(assignment)}
    return sorted(counts.values(), key=lambda c: order.get(c.notebook, len(order)))


def markdown(counts: list[ExerciseCounts]) -> str:
    """The report as Markdown: an overview table, then a table per exercise."""
    lines = ["# Class report", "", "| exercise | notebook | students | passed | most common mistake |"]
    lines.append("|---|---|---|---|---|")
    for c in counts:
        top = max(c.mistakes.items(), key=lambda kv: kv[1], default=("", 0))
        common = f"{top[0]} ({top[1]})" if top[1] else "none"
        lines.append(f"| `{c.exercise}` | {c.notebook} | {c.students} | {c.passed} | {common} |")
    for c in counts:
        lines += ["", f"## `{c.exercise}` ({c.notebook}): {c.passed} of {c.students} passed", ""]
        lines += ["| outcome | students |", "|---|---|"]
        lines += [f"| {label} | {n} |" for label, n in c.bars()]
    return "\n".join(lines) + "\n"


def chart(counts: list[ExerciseCounts], path: Path) -> None:
    """A horizontal bar chart per exercise (students per outcome), saved to ``path`` with Agg."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    heights = [0.28 * len(c.bars()) + 0.7 for c in counts] or [1.0]
    fig = Figure(figsize=(8, sum(heights)))
    FigureCanvasAgg(fig)
    axes = fig.subplots(max(1, len(counts)), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    for ax, c in zip(axes, counts):
        labels, values = zip(*c.bars())
        colours = ["tab:green"] + ["tab:red"] * len(c.mistakes) + ["tab:gray", "tab:orange"]
        ax.barh(range(len(values)), values, color=colours)
        ax.set_yticks(range(len(values)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, max(1, c.students))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # students are counted, never halved
        ax.set_title(f"{c.exercise}: {c.passed} of {c.students} passed", fontsize=9, loc="left")
    axes[-1].set_xlabel("students")
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
