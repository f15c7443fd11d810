"""The ``course-lab`` command: ``course-lab release --out DIR`` writes the student version."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_utils.lab.release import ReleaseError, release


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course-lab", description="Instructor tools for Inside the Transformer.")
    commands = parser.add_subparsers(dest="command", required=True)
    rel = commands.add_parser("release", help="write the student version of the notebooks")
    rel.add_argument("--out", required=True, help="folder to write the student notebooks into (replaced)")
    rel.add_argument("--source", default=str(_default_source()), help="solution notebook or folder (default: notebooks)")
    rel.set_defaults(func=_cmd_release)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
