"""Where a student stands: ``course-lab progress`` runs the public checks on their own saved notebooks.

It grades the student's copy (``notebooks/student``, see ``workspace.py``) with the grader itself, in
the student's setting: no sandbox (it is their own code on their own machine), public cases only
(the hidden ones are the instructor's), and only the notebooks they have changed since they got
them, unless ``--all``: an untouched notebook is "not started" without running it (09 would train
for minutes to say so). It prints one line per exercise and the points, for example::

    03_attention   attention_scores   ✅ passed                                   2 / 2
    03_attention   sdp_attention      ❌ softmax over queries: your softmax ...   0 / 2

Nothing is written into the student's folder; the grading happens on a copy in a temporary folder.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from course_utils.lab.release.workspace import MANIFEST, _digest, _read_manifest
from course_utils.lab.status import Status

STUDENT = "you"


def changed_notebooks(folder: Path) -> list[str]:
    """The student's notebooks whose text differs from what they were handed (all, without a manifest)."""
    handed_out = _read_manifest(folder)
    names = sorted(p.name for p in folder.glob("[0-9][0-9]_*.ipynb") if not p.name.endswith(".updated.ipynb"))
    return [n for n in names if handed_out.get(n) != _digest((folder / n).read_text())]


def _verdict(row) -> str:
    if row.status == Status.OK and row.points >= row.max_points:
        return "✅ passed"
    not_attempted = row.feedback.startswith("not attempted") or "NotImplementedError" in row.feedback
    if row.status == Status.NOT_DEFINED or not_attempted:
        return "⏳ not attempted yet"
    first = row.feedback.strip().splitlines()[0] if row.feedback.strip() else row.status
    return "❌ " + (first if len(first) <= 70 else first[:69] + "…")


def standing_lines(folder: Path, source: Path, everything: bool = False, progress: bool = True) -> list[str]:
    """The report: grade the student's changed notebooks (all with ``everything``) on their public cases."""
    from course_utils.lab.grading.folder import grade_folder
    from course_utils.lab.limits import Limits
    from course_utils.lab.grading.submissions import course_catalog

    folder, source = Path(folder), Path(source)
    if not folder.is_dir():
        raise ValueError(f"folder {folder} does not exist: run `make lab` (or `course-lab update`) first")
    catalog = course_catalog(source)
    names = sorted(p.name for p in folder.glob("[0-9][0-9]_*.ipynb") if not p.name.endswith(".updated.ipynb"))
    chosen = names if everything else changed_notebooks(folder)
    lines, earned, possible = [], 0.0, 0.0
    results = {}
    if chosen:
        with tempfile.TemporaryDirectory(prefix="course-progress-") as tmp:
            mine = Path(tmp) / STUDENT
            mine.mkdir()
            for name in chosen:
                shutil.copyfile(folder / name, mine / name)
            run = grade_folder(Path(tmp), source, Limits(sandbox=False), seeds=[], progress=progress)
            results = {r.notebook: r for r in run.results}
    for name in names:
        stem = name[: -len(".ipynb")]
        entry = catalog.get(name)
        result = results.get(name) or results.get(stem)
        if result is None:
            total = sum(entry.points.values()) if entry is not None else 0.0
            possible += total
            lines.append(f"{stem:<32} {'(every exercise)':<26} ⏳ not started{'':<42} 0 / {total:g}")
            continue
        order = {e: i for i, e in enumerate(entry.points if entry is not None else ())}  # the notebook's order
        for row in sorted(result.exercises, key=lambda r: order.get(r.exercise, len(order))):
            earned, possible = earned + row.points, possible + row.max_points
            lines.append(f"{stem:<32} {row.exercise:<26} {_verdict(row):<56} {row.points:g} / {row.max_points:g}")
    lines.append(f"public checks: {earned:g} of {possible:g} points (your instructor's hidden cases are graded later)")
    return lines


def add_command(commands) -> None:
    """``course-lab progress [--folder notebooks/student] [--all]``."""
    cmd = commands.add_parser("progress", help="run the public checks on your own saved notebooks")
    cmd.add_argument("--folder", default="notebooks/student", help="your copy (default: notebooks/student)")
    cmd.add_argument("--source", default="notebooks", help="the course's notebooks (default: notebooks)")
    cmd.add_argument("--all", action="store_true", help="also run the notebooks you have not changed")
    cmd.set_defaults(func=_cmd_progress)


def _cmd_progress(args) -> int:
    try:
        lines = standing_lines(Path(args.folder), Path(args.source), everything=args.all)
    except (ValueError, OSError) as exc:
        print(f"course-lab progress: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


__all__ = ["MANIFEST", "add_command", "changed_notebooks", "standing_lines"]
