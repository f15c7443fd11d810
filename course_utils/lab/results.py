"""What grading a submission produces: a row per exercise (``ExerciseResult``) inside a
``SubmissionResult`` per submitted file, as JSON in job results and the journal.

An ``ExerciseResult``'s ``feedback`` is what the student may see; ``detail``, when set, is the whole
story for the instructor (a hidden case's label, inputs, expected values), shown to the student only
with ``course-lab grade --release-hidden``; ``mistake`` names the bank mistake the answer matched.

``zero_rows(points, status, feedback)`` gives every exercise of a notebook 0 points and one status,
for a submission that could not be graded: ``zero_rows({'stable_softmax': 2}, 'unreadable', why)``.

Leaves out: how they are computed (``grade.py``) and written (``gradebook.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
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


@dataclass
class SubmissionResult:
    student: str
    submission: str
    notebook: str
    status: str
    exercises: list[ExerciseResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "SubmissionResult":
        rows = [ExerciseResult(**row) for row in data.pop("exercises")]
        return cls(exercises=rows, **data)


def zero_rows(points: dict[str, float], status: str, feedback: str) -> list[ExerciseResult]:
    """A row at 0 points with ``status`` and ``feedback`` for each exercise in ``points`` (name -> max points)."""
    return [ExerciseResult(name, 0, p, status, feedback) for name, p in points.items()]
