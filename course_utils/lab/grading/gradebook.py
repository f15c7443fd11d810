"""Write the gradebook: a CSV, one feedback file per student, and a closing summary line.

The CSV (the instructor's) has one row per (submission, exercise), a ``missing`` row per notebook of
the assignment a student did not hand in, and one ``TOTAL`` row per student out of the whole
assignment's points (``totals.py``: the best submission of each notebook counts), with columns
``student, submission, notebook, exercise, points, max_points, status, feedback, feedback_file``;
its ``feedback`` is the full text, hidden cases included. Feedback files (the students') go to
``<csv stem>_feedback/`` next to the CSV, one Markdown file per student, named from the student's
name with odd characters replaced (names that clash get ``-2``, ``-3``); they follow the feedback
policy (``feedback.py``: no hidden input or value unless ``release_hidden``) and list each
submission's problems, the very ones the summary counts. ``<csv stem>_canvas.csv`` holds the same
totals for Canvas (``canvas.py``, matched to a roster if given). All are written to temporary paths
first and moved into place with ``os.replace`` / a rename, so a crash never leaves half a gradebook.
Cells that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, after
spaces or a tab too) get a leading apostrophe (``canvas.guard``).

Everything a student can influence (names, file names, exception messages, printed output) goes
through ``student_text.one_line`` first: control and invisible formatting characters (terminal escapes, bidi
overrides) are removed and line breaks become ``⏎``, so no text can start a new CSV record, a new
Markdown line, a heading or another student's section; in the Markdown, ``<`` and ``[`` are
escaped too (no raw HTML, no links) outside code spans (where Markdown shows a
backslash as it is), code fences are broken up, and a comparison's place such as ``reference[0]`` is
said in words (``readable_where``).

Leaves out: grading (``folder.py``).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from course_utils.lab.grading.canvas import canvas_export, guard, write_canvas
from course_utils.lab.grading.feedback import describe_cell, problems
from course_utils.lab.grading.student_text import one_line
from course_utils.lab.results import SubmissionResult
from course_utils.lab.status import Status
from course_utils.lab.grading.totals import StudentTotal, result_points, student_totals

COLUMNS = [
    "student",
    "submission",
    "notebook",
    "exercise",
    "points",
    "max_points",
    "status",
    "feedback",
    "feedback_file",
]
NOTE_CHARS = 2_000


_WHERE = re.compile(r"(?<=[A-Za-z0-9])((?:\[(?:-?\d+|'[^'\]]{0,40}')\])+)(?=[:,;)]|\s|$)")
_CODE = re.compile(r"(`+)(.+?)\1")


def readable_where(text: str) -> str:
    """A comparison's place in words: ``'differ from the reference[0][2]: ...'`` ->
    ``'differ from the reference (in item 0, then item 2 of the answer): ...'``."""

    def words(match: re.Match) -> str:
        parts = re.findall(r"\[(-?\d+|'[^']*')\]", match.group(1))
        said = [f"item {p}" if not p.startswith("'") else f"key {p}" for p in parts]
        return f" (in {', then '.join(said)} of the answer)"

    return _WHERE.sub(words, text)


def _md_plain(text: str) -> str:
    return readable_where(text).replace("\\", "\\\\").replace("<", "&lt;").replace("[", "\\[")


def _md(text) -> str:
    """Student-influenced text as one line of Markdown: escaped outside code spans, code spans kept as
    they are (Markdown shows a backslash in a code span literally), fences broken up."""
    text = one_line(text).replace("```", "`\u200b``")
    out, last = [], 0
    for match in _CODE.finditer(text):
        out += [_md_plain(text[last : match.start()]), match.group(0)]
        last = match.end()
    return "".join(out + [_md_plain(text[last:])])


def _cell(text: str) -> str:
    return guard(one_line(text))


def _num(value: float) -> str:
    return f"{value:g}"


def feedback_names(students: list[str]) -> dict[str, str]:
    """A distinct, safe file name per student: ``['a b', 'a_b'] -> {'a b': 'a_b.md', 'a_b': 'a_b-2.md'}``."""
    names, used = {}, set()
    for student in students:
        if student in names:
            continue
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", student).strip("._-")[:80] or "student"
        candidate, n = stem, 1
        while candidate.lower() in used:
            n += 1
            candidate = f"{stem}-{n}"
        used.add(candidate.lower())
        names[student] = candidate + ".md"
    return names


def assignment_of(results: list[SubmissionResult]) -> dict[str, float]:
    """The notebooks graded in ``results`` and their points, for a gradebook written without an assignment."""
    found: dict[str, float] = {}
    for result in results:
        if result.notebook and result.exercises:
            found.setdefault(result.notebook, sum(e.max_points for e in result.exercises))
    return found


def csv_rows(
    results: list[SubmissionResult], files: dict[str, str], assignment: dict[str, float] | None = None
) -> list[list[str]]:
    assignment = assignment_of(results) if assignment is None else assignment
    rows = []
    for result in results:
        for ex in result.exercises:
            rows.append(
                [
                    result.student,
                    result.submission,
                    result.notebook,
                    ex.exercise,
                    _num(ex.points),
                    _num(ex.max_points),
                    ex.status,
                    ex.full_text(),
                    files[result.student],
                ]
            )
    for student, total in student_totals(results, assignment).items():
        for notebook in total.missing:
            best = _num(assignment[notebook])
            rows.append([student, "", notebook, "", "0", best, Status.MISSING, "no submission", files[student]])
        mine = [r for r in results if r.student == student]
        counted = {r.status for r in mine if r.notebook in assignment}  # a stray file is listed, not counted
        bad = sorted({s for s in counted if s != Status.OK} | ({Status.MISSING} if total.missing else set()))
        rows.append(
            [
                student,
                f"{len(mine)} submission(s)",
                "",
                "TOTAL",
                _num(total.points),
                _num(total.max_points),
                ",".join(bad) or Status.OK,
                total.describe(assignment),
                files[student],
            ]
        )
    return [[_cell(v) for v in row] for row in rows]


def feedback_text(
    student: str,
    results: list[SubmissionResult],
    total: StudentTotal | None = None,
    assignment: dict[str, float] | None = None,
    release_hidden: bool = False,
) -> str:
    """One student's feedback file: their total, then each submission, its problems and rows."""
    lines = [f"# Feedback for {_md(student)}", ""]
    if total is not None and assignment is not None:
        lines += [f"Total: {_md(total.describe(assignment))}", ""]
    for result in results:
        got = result_points(result)
        best = sum(e.max_points for e in result.exercises)
        lines += [
            f"## {_md(result.submission)}",
            "",
            f"- notebook: {_md(result.notebook or 'unknown')}",
            f"- status: {_md(result.status)}",
            f"- points: {got:g} / {best:g}",
            f"- problems: {_md(', '.join(problems(result)) or 'none')}",
            "",
        ]
        for ex in result.exercises:
            text = ex.full_text() if release_hidden else ex.feedback
            lines.append(
                f"- **{_md(ex.exercise or 'submission')}** ({ex.points:g}/{ex.max_points:g}, {_md(ex.status)}): "
                f"{_md(text)}"
            )
        if result.cells:
            notes = "\n".join(one_line(describe_cell(p)).replace("```", "`\u200b``") for p in result.cells)
            if len(notes) > NOTE_CHARS:
                notes = notes[:NOTE_CHARS] + f"\n… ({len(notes) - NOTE_CHARS:,} more characters not shown)"
            lines += ["", "Running the notebook:", "", "```", notes, "```"]
        lines.append("")
    return "\n".join(lines)


def write_atomic(path: Path, write) -> None:
    """Call ``write(handle)`` on a temporary file beside ``path``, then move it into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_gradebook(
    results: list[SubmissionResult],
    out_csv: Path,
    assignment: dict[str, float] | None = None,
    release_hidden: bool = False,
    roster: dict | None = None,
    notes: list[str] | None = None,
) -> Path:
    """Write the CSV, the feedback folder and the Canvas CSV atomically; return the feedback folder.

    ``assignment``: ``{notebook: points}`` the totals are out of (default: the notebooks graded);
    ``roster``: ``canvas.read_roster``'s, to fill Canvas's IDs; what the Canvas export matched and left
    out is appended to ``notes``."""
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    assignment = assignment_of(results) if assignment is None else assignment
    totals = student_totals(results, assignment)
    files = feedback_names([r.student for r in results])
    feedback_dir = out_csv.with_name(out_csv.stem + "_feedback")
    staging = Path(tempfile.mkdtemp(prefix=f".{feedback_dir.name}-", dir=out_csv.parent))
    try:
        for student, name in files.items():
            mine = [r for r in results if r.student == student]
            text = feedback_text(student, mine, totals[student], assignment, release_hidden)
            (staging / name).write_text(text, encoding="utf-8")
        old = feedback_dir.with_name(f".{feedback_dir.name}-old")
        if feedback_dir.exists():
            shutil.rmtree(old, ignore_errors=True)
            feedback_dir.rename(old)
        staging.rename(feedback_dir)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    rows = [COLUMNS] + csv_rows(results, files, assignment)
    write_atomic(out_csv, lambda handle: csv.writer(handle).writerows(rows))
    canvas = canvas_export(totals, assignment, roster)
    write_canvas(out_csv.with_name(out_csv.stem + "_canvas.csv"), canvas, write_atomic)
    if notes is not None:
        notes += canvas.notes(roster is not None)
    return feedback_dir


def summary_lines(run, seconds: float, assignment: dict[str, float] | None = None) -> list[str]:
    """The summary (``summary_line``), the assignment and who missed part of it, how many results came
    from the journal, then each warning."""
    lines = [summary_line(run.results, seconds)]
    if assignment is not None:
        totals = student_totals(run.results, assignment)
        missing = sum(1 for t in totals.values() if t.missing)
        lines.append(
            f"assignment: {len(assignment)} notebook(s), {sum(assignment.values()):g} points; "
            f"{missing} of {len(totals)} student(s) missed at least one notebook (0 points for it)"
        )
    if run.resumed:
        lines.append(f"resumed: {run.resumed} result(s) taken from the journal of an interrupted run")
    lines += [f"warning: {one_line(w)}" for w in run.warnings]
    return lines


def summary_line(results: list[SubmissionResult], seconds: float) -> str:
    """``'graded 12 submission(s) from 10 student(s) in 40.1 s: 3 full marks, 4 zero, 5 with problems (2 cell
    error, ...)'``: a submission has problems when its feedback file lists some (``feedback.problems``);
    each kind counts the submissions that have it."""
    full = sum(1 for r in results if r.exercises and all(e.points == e.max_points > 0 for e in r.exercises))
    zero = sum(1 for r in results if result_points(r) == 0)
    listed = [problems(r) for r in results]
    kinds = Counter(kind for found in listed for kind in found)
    detail = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    students = len({r.student for r in results})
    return (
        f"graded {len(results)} submission(s) from {students} student(s) in {seconds:.1f} s: "
        f"{full} full marks, {zero} zero, {sum(1 for found in listed if found)} with problems"
        + (f" ({detail})" if detail else "")
    )
