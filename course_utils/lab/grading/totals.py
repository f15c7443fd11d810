"""Each student's total over an assignment, and the same totals as a Canvas gradebook CSV.

An assignment is a set of course notebooks, each worth the sum of its exercises' points (from the
course's own notebooks): the ones ``course-lab grade --assignment 00_welcome,03_attention`` names,
or every notebook of the course. A student's total is, for each of its notebooks, the best of
their submissions of it (0, status ``missing``, when there is none), out of the whole
assignment's points; a submission of a notebook outside the assignment is graded and listed but
not counted.

Leaves out: grading (``folder.py``), the files written (``gradebook.py``) and Canvas's CSV
(``canvas.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from course_utils.lab.results import SubmissionResult

def assignment_points(catalog: dict, names: str | None) -> dict[str, float]:
    """``{notebook: its points}`` for the notebooks named in ``names`` (comma-separated, ``.ipynb``
    optional; ``None`` or empty: all of ``catalog``, a ``{name: CourseNotebook}`` dict)."""
    wanted = [n.strip() for n in (names or "").split(",") if n.strip()]
    chosen = []
    for name in wanted:
        full = name if name.endswith(".ipynb") else name + ".ipynb"
        if full not in catalog:
            raise ValueError(f"assignment names {name!r}, which is not a course notebook; known: {', '.join(catalog)}")
        chosen.append(full)
    return {n: float(sum(catalog[n].points.values())) for n in (chosen or catalog)}


@dataclass
class StudentTotal:
    """One student's standing: points per assignment notebook (best submission), what is missing."""

    student: str
    scores: dict[str, float] = field(default_factory=dict)  # notebook -> points counted
    best: dict[str, SubmissionResult] = field(default_factory=dict)  # notebook -> the submission counted
    copies: dict[str, int] = field(default_factory=dict)  # notebook -> submissions of it
    missing: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # submissions not counted (other notebooks, unreadable)
    points: float = 0.0
    max_points: float = 0.0

    def describe(self, assignment: dict[str, float]) -> str:
        """``'2 of 5 points: 00_welcome.ipynb 2/2, 10_pair.ipynb missing (0/3)'``."""
        parts = []
        for notebook, best in assignment.items():
            if notebook in self.missing:
                parts.append(f"{notebook} missing (0/{best:g})")
            else:
                copies = self.copies[notebook]
                more = f" (best of {copies} submissions)" if copies > 1 else ""
                parts.append(f"{notebook} {self.scores[notebook]:g}/{best:g}{more}")
        if self.outside:
            parts.append(f"not counted: {', '.join(self.outside)}")
        return f"{self.points:g} of {self.max_points:g} points: " + ", ".join(parts)


def result_points(result: SubmissionResult) -> float:
    return sum(e.points for e in result.exercises)


def student_totals(results: list[SubmissionResult], assignment: dict[str, float]) -> dict[str, StudentTotal]:
    """``{student: StudentTotal}`` in the order students first appear in ``results``."""
    totals: dict[str, StudentTotal] = {}
    for result in results:
        total = totals.setdefault(result.student, StudentTotal(result.student))
        if result.notebook not in assignment:
            total.outside.append(result.submission)
            continue
        total.copies[result.notebook] = total.copies.get(result.notebook, 0) + 1
        if result.notebook not in total.best or result_points(result) > result_points(total.best[result.notebook]):
            total.best[result.notebook] = result
    for total in totals.values():
        total.scores = {nb: result_points(total.best[nb]) if nb in total.best else 0.0 for nb in assignment}
        total.missing = [nb for nb in assignment if nb not in total.best]
        total.points = sum(total.scores.values())
        total.max_points = sum(assignment.values())
    return totals
