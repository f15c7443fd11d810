"""What grading a submission produces, as data: a row per exercise (``ExerciseResult``) and a
``CellProblem`` per cell that went wrong, inside a ``SubmissionResult`` per submitted file, as JSON in
job results, the journal and ``course-lab progress``'s cache.

An ``ExerciseResult``'s ``status`` and ``mistake`` (the name of the exercise's bank mistake the
answer matched, if any) are what the class report and the progress lines read; ``feedback`` is the
text the student may see; ``detail``, when set, is the whole story for the instructor (a hidden
case's label, inputs, expected values), shown to the student only with ``course-lab grade
--release-hidden``. A ``CellProblem`` is a cell (its index in ``nb.cells``), the kind of problem and
what happened; it becomes a line of text only where it is shown (``feedback.describe_cell``). Nothing
reads a row's text back to learn what happened.

``zero_rows(points, status, feedback)`` gives every exercise of a notebook 0 points and one status,
for a submission that could not be graded: ``zero_rows({'stable_softmax': 2}, 'unreadable', why)``.

Leaves out: how they are computed (``grade.py``, ``cells.py``) and written (``gradebook.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

CELL_KINDS = ("error", "course_error", "timeout", "total_timeout", "output_truncated", "kernel_died")


@dataclass(frozen=True)
class ExerciseResult:
    exercise: str
    points: float
    max_points: float
    status: str
    feedback: str
    detail: str = ""  # the instructor's full text, when it differs from ``feedback`` (hidden cases)
    mistake: str = ""  # the name of the exercise's bank mistake the answer matched, if any

    def full_text(self) -> str:
        """What the instructor sees: ``detail`` if there is one, else ``feedback``."""
        return self.detail or self.feedback


@dataclass(frozen=True)
class CellProblem:
    """Something that went wrong in one cell: ``CellProblem(4, 'error', 'NameError: x')`` is the fifth cell
    of ``nb.cells`` raising. ``kind`` is one of ``CELL_KINDS`` (``course_error``: a cell as the course
    wrote it raised, the course's fault, not the student's)."""

    index: int
    kind: str
    detail: str

    def __post_init__(self):
        if self.kind not in CELL_KINDS:
            raise ValueError(f"CellProblem kind must be one of {CELL_KINDS}, got {self.kind!r}")


@dataclass
class SubmissionResult:
    student: str
    submission: str
    notebook: str
    status: str
    exercises: list[ExerciseResult] = field(default_factory=list)
    cells: list[CellProblem] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "SubmissionResult":
        rows = [ExerciseResult(**row) for row in data.pop("exercises")]
        cells = [CellProblem(**cell) for cell in data.pop("cells", [])]
        return cls(exercises=rows, cells=cells, **data)


def zero_rows(points: dict[str, float], status: str, feedback: str) -> list[ExerciseResult]:
    """A row at 0 points with ``status`` and ``feedback`` for each exercise in ``points`` (name -> max points)."""
    return [ExerciseResult(name, 0, p, status, feedback) for name, p in points.items()]
