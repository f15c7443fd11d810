"""Where a student stands: ``course-lab progress`` runs the public checks on their own saved notebooks.

It grades the student's copy (``notebooks/student``, see ``release/workspace.py``) with the grader itself, in
the student's setting: no sandbox (it is their own code on their own machine), public cases only
(the hidden ones are the instructor's), and only the notebooks they have changed since they got
them, unless ``--all``: an untouched notebook is "not started" without running it (09 would train
for minutes to say so). ``course-lab progress 03`` (or ``03_attention``) looks at that notebook only.
A notebook checked before and not saved since is not run again: its verdict comes from the cache
(``verdict_cache.py``). It prints one line per exercise and the points, then each cell that raised,
the first being where JupyterLab's Run All stops, for example::

    03_attention   attention_scores   ✅ passed                                   2 / 2
    03_attention   sdp_attention      ❌ softmax over queries: your softmax ...   0 / 2
    03_attention   cell 14 raises NameError: name 'scores' is not defined (Run All stops here)  `weights = ...`

The lines are written from the results' data (``results.py``: each row's status, each
``CellProblem``), never from their text. Nothing but the cache is written into the student's
folder; the grading happens on a copy in a temporary folder. It lives with the grader, which it
runs; the release wing (the student's workspace) never imports the grader.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

from course_utils.lab.grading.verdict_cache import VerdictCache, cache_key
from course_utils.lab.release.workspace import find_notebook, read_manifest, student_notebooks, untouched
from course_utils.lab.results import CellProblem, ExerciseResult
from course_utils.lab.status import Status

STUDENT = "you"
SHOWN = ("error", "timeout", "total_timeout", "kernel_died")  # the cell problems a line is written for


def changed_notebooks(folder: Path) -> list[str]:
    """The student's notebooks whose cells differ from what they were handed (all, without a manifest)."""
    handed_out = read_manifest(folder)
    return [n for n in student_notebooks(folder) if not untouched(Path(folder) / n, handed_out.get(n))]


def _verdict(row: ExerciseResult) -> str:
    if row.status == Status.OK and row.points >= row.max_points:
        return "✅ passed"
    if row.status in (Status.NOT_DEFINED, Status.NOT_ATTEMPTED):
        return "⏳ not attempted yet"
    first = row.feedback.strip().splitlines()[0] if row.feedback.strip() else row.status
    return "❌ " + (first if len(first) <= 70 else first[:69] + "…")


def _grade(folder: Path, names: list[str], source: Path, progress: bool) -> dict:
    """Grade ``names`` (copies, in a temporary folder): ``{file name: SubmissionResult}``."""
    from course_utils.lab.grading.folder import grade_folder  # imports torch: not at `course-lab` start
    from course_utils.lab.limits import Limits

    with tempfile.TemporaryDirectory(prefix="course-progress-") as tmp:
        mine = Path(tmp) / STUDENT
        mine.mkdir()
        for name in names:
            shutil.copyfile(folder / name, mine / name)
        run = grade_folder(Path(tmp), source, Limits(sandbox=False), seeds=[], progress=progress)
    return {Path(r.submission).name: r for r in run.results}


def _cell_lines(stem: str, found: list[CellProblem], notebook: Path) -> list[str]:
    """A line for each cell that raised or ran out of time: its number, the exception line, its first line."""
    try:
        cells = nbformat.read(str(notebook), as_version=4).cells
    except Exception:  # the verdict stands without the cells' first lines
        cells = []
    lines, first = [], True
    for problem in found:
        if problem.kind not in SHOWN:
            continue
        number, kind = problem.index + 1, problem.kind.replace("_", " ")
        detail = (problem.detail.strip().splitlines() or [""])[0]
        what = f"raises {detail}" if problem.kind == "error" else f"{kind}: {detail}"
        where = " (Run All stops here)" if first else ""
        source = cells[number - 1].source.strip().splitlines() if 0 < number <= len(cells) else []
        start = f"  `{source[0][:40]}`" if source else ""
        lines.append(f"{stem:<32} cell {number} {what}{where}{start}")
        first = False
    return lines


def standing_lines(
    folder: Path, source: Path, everything: bool = False, progress: bool = True, only: list[str] = ()
) -> list[str]:
    """The report: grade the student's changed notebooks (all with ``everything``; ``only`` those named:
    ``["03"]``) on their public cases, each verdict from the cache when the notebook has not changed."""
    from course_utils.lab.grading.submissions import course_catalog  # imports torch: not at `course-lab` start

    folder, source = Path(folder), Path(source)
    if not folder.is_dir():
        raise ValueError(f"folder {folder} does not exist: run `make lab` (or `course-lab update`) first")
    catalog = course_catalog(source)
    names = student_notebooks(folder)
    if only:
        names = sorted({find_notebook(names, query) for query in only})
    changed = set(changed_notebooks(folder))
    chosen = [n for n in names if everything or n in changed]
    cache = VerdictCache(folder)
    keys = {n: cache_key(folder / n, source / n if source.is_dir() else None) for n in chosen}
    results = {n: cache.get(n, keys[n]) for n in chosen}
    todo = [n for n in chosen if results[n] is None]
    if todo:
        results.update(_grade(folder, todo, source, progress))
        for name in todo:
            if results.get(name) is not None:
                cache.put(name, keys[name], results[name])
        cache.save()
    lines, earned, possible = [], 0.0, 0.0
    for name in names:
        stem = name[: -len(".ipynb")]
        entry = catalog.get(name)
        result = results.get(name)
        if result is None:
            total = sum(entry.points.values()) if entry is not None else 0.0
            possible += total
            lines.append(f"{stem:<32} {'(every exercise)':<26} ⏳ not started{'':<42} 0 / {total:g}")
            continue
        order = {e: i for i, e in enumerate(entry.points if entry is not None else ())}  # the notebook's order
        for row in sorted(result.exercises, key=lambda r: order.get(r.exercise, len(order))):
            earned, possible = earned + row.points, possible + row.max_points
            lines.append(f"{stem:<32} {row.exercise:<26} {_verdict(row):<56} {row.points:g} / {row.max_points:g}")
        lines += _cell_lines(stem, result.cells, folder / name)
    reused = len(chosen) - len(todo)
    cached = f"; {reused} unchanged since last checked, not run again" if reused else ""
    lines.append(
        f"public checks: {earned:g} of {possible:g} points (your instructor's hidden cases are graded later{cached})"
    )
    return lines


def add_command(commands) -> None:
    """``course-lab progress [NOTEBOOK ...] [--folder notebooks/student] [--all]``."""
    cmd = commands.add_parser("progress", help="run the public checks on your own saved notebooks")
    cmd.add_argument("notebook", nargs="*", help="only these notebooks: 03, 03_attention or 03_attention.ipynb")
    cmd.add_argument("--folder", default="notebooks/student", help="your copy (default: notebooks/student)")
    cmd.add_argument("--source", default="notebooks", help="the course's notebooks (default: notebooks)")
    cmd.add_argument("--all", action="store_true", help="also run the notebooks you have not changed")
    cmd.set_defaults(func=_cmd_progress)


def _cmd_progress(args) -> int:
    try:
        lines = standing_lines(Path(args.folder), Path(args.source), everything=args.all, only=args.notebook)
    except (ValueError, OSError) as exc:
        print(f"course-lab progress: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


__all__ = ["add_command", "changed_notebooks", "standing_lines"]
