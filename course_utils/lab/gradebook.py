"""Write the gradebook: a CSV, one feedback file per student, and a closing summary line.

The CSV has one row per (submission, exercise) and one ``TOTAL`` row per student, with columns
``student, submission, notebook, exercise, points, max_points, status, feedback, feedback_file``.
Feedback files go to ``<csv stem>_feedback/`` next to the CSV, one Markdown file per student,
named from the student's name with odd characters replaced; names that clash get ``-2``, ``-3``.
Both are written to temporary paths first and moved into place with ``os.replace`` / a rename, so
a crash never leaves half a gradebook. Cells that a spreadsheet would run as a formula
(starting with ``=``, ``+``, ``-``, ``@``) get a leading apostrophe.

Everything a student can influence (names, file names, exception messages, printed output) goes
through ``one_line`` first: control and invisible formatting characters (terminal escapes, bidi
overrides) are removed and line breaks become ``⏎``, so no text can start a new CSV record, a new
Markdown line, a heading or another student's section; in the Markdown, ``<`` and ``[`` are
escaped too (no raw HTML, no links), and code fences are broken up.

Leaves out: grading (``folder.py``).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import tempfile
import unicodedata
from collections import Counter
from pathlib import Path

from course_utils.lab.results import SubmissionResult

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


def one_line(text) -> str:
    """``'a\nb\x1b[31m'`` -> ``'a ⏎ b[31m'``: one line, no control or invisible formatting characters."""
    text = re.sub(r"\r\n|[\r\n\u2028\u2029\x85\x0b\x0c]", " ⏎ ", str(text)).replace("\t", " ")
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn"))


def _md(text) -> str:
    text = one_line(text).replace("\\", "\\\\").replace("<", "&lt;").replace("[", "\\[")
    return text.replace("```", "`\u200b``")


def _cell(text: str) -> str:
    text = one_line(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


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


def csv_rows(results: list[SubmissionResult], files: dict[str, str]) -> list[list[str]]:
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
                    ex.feedback,
                    files[result.student],
                ]
            )
    for student in dict.fromkeys(r.student for r in results):
        mine = [r for r in results if r.student == student]
        got = sum(e.points for r in mine for e in r.exercises)
        best = sum(e.max_points for r in mine for e in r.exercises)
        bad = sorted({r.status for r in mine if r.status != "ok"})
        rows.append(
            [
                student,
                f"{len(mine)} submission(s)",
                "",
                "TOTAL",
                _num(got),
                _num(best),
                ",".join(bad) or "ok",
                f"{got:g} of {best:g} points",
                files[student],
            ]
        )
    return [[_cell(v) for v in row] for row in rows]


def feedback_text(student: str, results: list[SubmissionResult]) -> str:
    lines = [f"# Feedback for {_md(student)}", ""]
    for result in results:
        got = sum(e.points for e in result.exercises)
        best = sum(e.max_points for e in result.exercises)
        lines += [
            f"## {_md(result.submission)}",
            "",
            f"- notebook: {_md(result.notebook or 'unknown')}",
            f"- status: {_md(result.status)}",
            f"- points: {got:g} / {best:g}",
            "",
        ]
        for ex in result.exercises:
            lines.append(
                f"- **{_md(ex.exercise or 'submission')}** ({ex.points:g}/{ex.max_points:g}, {_md(ex.status)}): "
                f"{_md(ex.feedback)}"
            )
        if result.notes:
            notes = "\n".join(one_line(note).replace("```", "`\u200b``") for note in result.notes)
            if len(notes) > NOTE_CHARS:
                notes = notes[:NOTE_CHARS] + f"\n… ({len(notes) - NOTE_CHARS:,} more characters not shown)"
            lines += ["", "Running the notebook:", "", "```", notes, "```"]
        lines.append("")
    return "\n".join(lines)


def write_gradebook(results: list[SubmissionResult], out_csv: Path) -> Path:
    """Write the CSV and the feedback folder atomically; return the feedback folder."""
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    files = feedback_names([r.student for r in results])
    feedback_dir = out_csv.with_name(out_csv.stem + "_feedback")
    staging = Path(tempfile.mkdtemp(prefix=f".{feedback_dir.name}-", dir=out_csv.parent))
    try:
        for student, name in files.items():
            (staging / name).write_text(
                feedback_text(student, [r for r in results if r.student == student]), encoding="utf-8"
            )
        old = feedback_dir.with_name(f".{feedback_dir.name}-old")
        if feedback_dir.exists():
            shutil.rmtree(old, ignore_errors=True)
            feedback_dir.rename(old)
        staging.rename(feedback_dir)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fd, tmp = tempfile.mkstemp(prefix=f".{out_csv.name}-", dir=out_csv.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            writer.writerows(csv_rows(results, files))
        os.replace(tmp, out_csv)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return feedback_dir


def summary_lines(run, seconds: float) -> list[str]:
    """The summary (``summary_line``), then how many results came from the journal, then each warning."""
    lines = [summary_line(run.results, seconds)]
    if run.resumed:
        lines.append(f"resumed: {run.resumed} result(s) taken from the journal of an interrupted run")
    lines += [f"warning: {one_line(w)}" for w in run.warnings]
    return lines


def summary_line(results: list[SubmissionResult], seconds: float) -> str:
    """``'graded 12 submissions from 10 students in 40.1 s: 3 full marks, 4 zero, 5 with problems (...)'``."""
    full = sum(1 for r in results if r.exercises and all(e.points == e.max_points > 0 for e in r.exercises))
    zero = sum(1 for r in results if sum(e.points for e in r.exercises) == 0)
    problems = Counter(r.status for r in results if r.status != "ok")
    detail = ", ".join(f"{n} {s}" for s, n in sorted(problems.items()))
    students = len({r.student for r in results})
    return (
        f"graded {len(results)} submission(s) from {students} student(s) in {seconds:.1f} s: "
        f"{full} full marks, {zero} zero, {sum(problems.values())} with errors" + (f" ({detail})" if detail else "")
    )
