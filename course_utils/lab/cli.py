"""The ``course-lab`` command.

``course-lab release --out DIR`` writes the student version; ``course-lab grade SUBMISSIONS/ --out
grades.csv`` grades a folder of submissions into a gradebook (each in a bubblewrap sandbox; it
refuses without ``bwrap`` unless ``--no-sandbox``; a rerun after a crash resumes from the journal
``.grades.csv.journal`` beside the CSV). Beside the gradebook it writes the students' feedback files,
``grades_canvas.csv`` (Canvas's import format) and the class report (``grades_class_report.md`` and
``.png``); totals are out of ``--assignment``'s notebooks (default: the whole course), and
``--release-hidden`` (after the deadline) shows hidden cases' inputs and values to students too.
``course-lab export --to nbgrader|otter
--out DIR`` writes the notebooks for nbgrader or otter-grader. Neither ``release`` nor ``export`` ever
deletes or overwrites a file it did not write (``release/owned_files.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from course_utils.lab.grading.standing import add_command as add_progress_command
from course_utils.lab.limits import DEFAULTS
from course_utils.lab.release.notebook_diff import add_command as add_diff_command
from course_utils.lab.release.release import ReleaseError, release
from course_utils.lab.release.workspace import add_command as add_update_command


def _default_source() -> Path:
    return Path("notebooks")


def _cmd_release(args: argparse.Namespace) -> int:
    try:
        written = release(Path(args.source), Path(args.out))
    except ReleaseError as exc:
        print(f"course-lab release: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(written)} student notebook(s) to {args.out}")
    return 0


def _cmd_grade(args: argparse.Namespace) -> int:
    from course_utils.checks import all_exercises
    from course_utils.lab.grading.canvas import read_roster
    from course_utils.lab.grading.class_report import write_class_report
    from course_utils.lab.grading.similarity import write_similarity_report
    from course_utils.lab.grading.folder import grade_folder
    from course_utils.lab.grading.gradebook import summary_lines, write_gradebook
    from course_utils.lab.limits import Limits
    from course_utils.lab.grading.sandbox import isolation_problem
    from course_utils.lab.grading.submissions import course_catalog, default_source
    from course_utils.lab.grading.totals import assignment_points

    problem = isolation_problem()
    if problem and not args.no_sandbox:
        print(
            f"course-lab grade: error: cannot isolate student code: {problem}. Install what it names, or pass "
            "--no-sandbox to grade without isolation (only for code you trust).",
            file=sys.stderr,
        )
        return 2
    limits = Limits(
        cell_timeout=args.timeout,
        probe_timeout=args.probe_timeout,
        memory_mb=args.memory_mb,
        threads=args.threads,
        total_timeout=args.total_timeout,
        processes=args.max_processes,
        sandbox=not args.no_sandbox,
    )
    out = Path(args.out)
    journal = out.with_name(f".{out.name}.journal")
    start = time.monotonic()
    source = Path(args.source) if args.source else default_source()
    try:
        seeds = hidden_seeds(args.hidden_seeds)
        assignment = assignment_points(course_catalog(source), args.assignment)
        roster = read_roster(Path(args.roster)) if args.roster else None  # a bad roster stops before grading
        run = grade_folder(
            Path(args.submissions),
            source,
            limits,
            seeds,
            Path(args.hidden_tests) if args.hidden_tests else None,
            args.jobs,
            progress=not args.quiet,
            journal=journal,
        )
    except ValueError as exc:
        print(f"course-lab grade: error: {exc}", file=sys.stderr)
        return 2
    canvas_notes: list[str] = []
    feedback = write_gradebook(run.results, out, assignment, args.release_hidden, roster, canvas_notes)
    journal.unlink(missing_ok=True)  # every result is in the gradebook now
    report, chart = write_class_report(run.results, out, assignment, all_exercises())
    similar = write_similarity_report(run.results, Path(args.submissions), out, assignment, all_exercises(), source)
    print("\n".join(summary_lines(run, time.monotonic() - start, assignment)))
    print(f"wrote {args.out} and {len(list(feedback.glob('*.md')))} feedback file(s) in {feedback}")
    print(f"wrote {out.with_name(out.stem + '_canvas.csv')} (Canvas), {report} and {chart} (class report)")
    print("\n".join([*canvas_notes, f"wrote {similar} (similar answers, for the instructor only)"]))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from course_utils.lab.release.export import config_note, export

    try:
        written = export(Path(args.source), Path(args.out), args.to)
    except ValueError as exc:
        print(f"course-lab export: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(written)} {args.to} notebook(s) to {args.out}")
    note = config_note(Path(args.out)) if args.to == "nbgrader" else None
    if note:
        print(note)
    return 0


def hidden_seeds(text: str | None) -> list[int]:
    """``--hidden-seeds``' value as seeds: ``"3,4"`` -> ``[3, 4]``; none given -> the seeds the public checks
    announce (``checks.outcome.HIDDEN_SEEDS``), read only when grading so that ``course-lab`` starts torch-free."""
    if text is None:
        from course_utils.checks.outcome import HIDDEN_SEEDS

        return list(HIDDEN_SEEDS)
    return [int(s) for s in text.split(",") if s.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course-lab", description="Instructor tools for Inside the Transformer.")
    commands = parser.add_subparsers(dest="command", required=True)
    rel = commands.add_parser("release", help="write the student version of the notebooks")
    rel.add_argument(
        "--out", required=True, help="a new or empty folder, or a previous release (never a student's copy)"
    )
    rel.add_argument(
        "--source", default=str(_default_source()), help="solution notebook or folder (default: notebooks)"
    )
    rel.set_defaults(func=_cmd_release)
    add_update_command(commands)
    add_progress_command(commands)
    add_diff_command(commands)
    grd = commands.add_parser("grade", help="grade a folder of submissions into a CSV gradebook")
    grd.add_argument("submissions", help="folder of <student>/<notebook>.ipynb and/or <student>.ipynb files")
    grd.add_argument("--out", required=True, help="the CSV to write; feedback files go to <stem>_feedback/ beside it")
    grd.add_argument(
        "--hidden-tests", help="folder of instructor test modules (see course_utils/lab/grading/hidden.py)"
    )
    grd.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    grd.add_argument(
        "--source", help="the course's solution notebooks (points, names); default: the course's notebooks/"
    )
    d = DEFAULTS  # every limit's default, in limits.py only
    grd.add_argument(
        "--timeout",
        type=float,
        default=d["cell_timeout"],
        help=f"seconds per notebook cell (default {d['cell_timeout']:g})",
    )
    grd.add_argument(
        "--probe-timeout",
        type=float,
        default=d["probe_timeout"],
        help=f"seconds per call of a student's function (default {d['probe_timeout']:g})",
    )
    grd.add_argument(
        "--memory-mb",
        type=int,
        default=d["memory_mb"],
        help=f"memory of each submission, all its processes together, in MiB (default {d['memory_mb']})",
    )
    grd.add_argument(
        "--total-timeout",
        type=float,
        default=d["total_timeout"],
        help="seconds for a whole submission, cells and graded calls (default 10 x --timeout)",
    )
    grd.add_argument(
        "--max-processes",
        type=int,
        default=d["processes"],
        help=f"processes and threads of each submission together (default {d['processes']})",
    )
    grd.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run student code without the bubblewrap sandbox, as your own user (trusted code only)",
    )
    grd.add_argument(
        "--threads", type=int, default=d["threads"], help=f"torch/BLAS threads per kernel (default {d['threads']})"
    )
    grd.add_argument(
        "--hidden-seeds", default=None,
        help="seeds of the hidden cases, comma-separated (default: the checks' own, checks.outcome.HIDDEN_SEEDS)",
    )
    grd.add_argument(
        "--assignment",
        help="the notebooks totals are out of, comma-separated (00_welcome,03_attention); default: every notebook",
    )
    grd.add_argument(
        "--release-hidden",
        action="store_true",
        help="show hidden cases' inputs and expected values in the students' feedback (after the deadline)",
    )
    grd.add_argument(
        "--roster",
        help="Canvas's gradebook export (CSV): fills ID and SIS User ID in <stem>_canvas.csv, matching each "
        "student by SIS Login ID = the submission folder's name",
    )
    grd.add_argument("--quiet", action="store_true", help="no progress bar")
    grd.set_defaults(func=_cmd_grade)
    exp = commands.add_parser("export", help="write the notebooks for nbgrader or otter-grader")
    exp.add_argument("--to", required=True, choices=["nbgrader", "otter"])
    exp.add_argument(
        "--out", required=True, help="a new or empty folder, a previous export, or (nbgrader) your course folder"
    )
    exp.add_argument(
        "--source", default=str(_default_source()), help="solution notebook or folder (default: notebooks)"
    )
    exp.set_defaults(func=_cmd_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
