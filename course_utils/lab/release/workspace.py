"""The student's own copy of the course: made once, then only ever added to.

``make lab`` calls ``course-lab update``, which keeps ``notebooks/student/`` (git-ignored, inside the
folder JupyterLab serves) in step with the course without touching a student's work:

* the first time, every course notebook is written there in its student version (``release.py``);
* a course notebook the student does not have yet (a new one, or one they deleted) is added;
* a notebook the student has is **never overwritten**. If the course changed it since their copy
  was made, the new student version is written beside it as ``NN_topic.updated.ipynb`` and the
  report names both, so they can compare and carry over what they want.

What was handed out is remembered in ``.course-release.json`` (a hash of each student version), which is
how "the course changed it" is told apart from "the student changed it".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course_utils.lab.release.release import collect_notebooks, read_notebook, student_version

MANIFEST = ".course-release.json"
UPDATED_SUFFIX = ".updated.ipynb"


@dataclass
class WorkspaceReport:
    """What ``update_workspace`` did, notebook by notebook (file names)."""

    folder: Path
    added: list[str] = field(default_factory=list)  # written because the student had no such notebook
    kept: list[str] = field(default_factory=list)  # the student's copy, left alone; the course has not changed it
    updated_beside: list[tuple[str, str]] = field(default_factory=list)  # (theirs, the new version written beside)

    def lines(self) -> list[str]:
        """The report as a student reads it."""
        out = []
        if self.added and not self.kept and not self.updated_beside:
            out.append(
                f"Made your copy of the course in {self.folder} ({len(self.added)} notebooks). Work there: "
                "later updates add new notebooks beside yours and never overwrite them."
            )
        elif self.added:
            out.append(f"Added to {self.folder}: {', '.join(self.added)}")
        for theirs, new in self.updated_beside:
            out.append(
                f"The course changed {theirs} since you got it. Your copy is left as it is; "
                f"the new version is beside it as {new}: compare them and copy over what you want."
            )
        if self.kept and not self.added and not self.updated_beside:
            out.append(f"Your copy of the course in {self.folder} is up to date ({len(self.kept)} notebooks).")
        return out


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return _digest(path.read_text())
    except (OSError, UnicodeDecodeError):
        return None


def _free_beside(folder: Path, stem: str, handed_out: dict[str, str]) -> Path:
    """Where the new version of ``stem`` goes: ``stem.updated.ipynb`` unless the student has edited that file."""
    for n in range(1, 100):
        beside = folder / (stem + (UPDATED_SUFFIX if n == 1 else f".updated-{n}.ipynb"))
        if not beside.exists() or _file_digest(beside) == handed_out.get(beside.name):
            return beside
    raise ValueError(f"{folder}: too many {stem}.updated-N.ipynb files; delete the ones you no longer need")


def _read_manifest(folder: Path) -> dict[str, str]:
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def update_workspace(source: Path, folder: Path) -> WorkspaceReport:
    """Bring ``folder`` (the student's copy) up to date with the course notebooks in ``source``.

    Never overwrites a notebook the student has; see the module docstring. Every student version is
    built (and checked for leaked solutions) before anything is written.
    """
    source, folder = Path(source), Path(folder)
    if folder.resolve() == source.resolve():
        raise ValueError(f"folder must differ from source (both are {source})")
    versions = {path.name: student_version(read_notebook(path), path.name) for path in collect_notebooks(source)}
    folder.mkdir(parents=True, exist_ok=True)
    handed_out = _read_manifest(folder)
    report = WorkspaceReport(folder)
    for name, nb in versions.items():
        text = nbformat.writes(nb) + "\n"
        digest, target = _digest(text), folder / name
        if not target.exists():
            target.write_text(text)
            report.added.append(name)
        elif name in handed_out and handed_out[name] != digest:
            beside = _free_beside(folder, name[: -len(".ipynb")], handed_out)
            beside.write_text(text)  # a file of ours (or one the student never edited): theirs is never touched
            handed_out[beside.name] = digest
            report.updated_beside.append((name, beside.name))
        else:
            report.kept.append(name)
        handed_out[name] = digest
    (folder / MANIFEST).write_text(json.dumps(handed_out, indent=1, sort_keys=True) + "\n")
    return report


def add_command(commands) -> None:
    """``course-lab update [--source notebooks] [--folder notebooks/student]`` (``make lab`` runs it)."""
    cmd = commands.add_parser(
        "update", help="make or update the student's own copy of the course (never overwrites their notebooks)"
    )
    cmd.add_argument("--source", default="notebooks", help="the course's notebooks (default: notebooks)")
    cmd.add_argument("--folder", default="notebooks/student", help="the student's copy (default: notebooks/student)")
    cmd.set_defaults(func=_cmd_update)


def _cmd_update(args) -> int:
    import sys

    from course_utils.lab.release.release import ReleaseError

    try:
        report = update_workspace(Path(args.source), Path(args.folder))
    except (ReleaseError, ValueError, OSError) as exc:
        print(f"course-lab update: error: {exc}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    return 0
