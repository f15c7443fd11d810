"""The student's own copy of the course: made once, then only ever added to.

``make lab`` calls ``course-lab update``, which keeps ``notebooks/student/`` (git-ignored, inside the
folder JupyterLab serves) in step with the course without touching a student's work:

* the first time, every course notebook is written there in its student version (``release.py``);
* a course notebook the student does not have yet (a new one, or one they deleted) is added;
* a notebook the student has is **never overwritten** once they have changed it. If the course
  changed it since their copy was made, a notebook they never changed (its cells are still the ones
  handed out: running it does not count) is refreshed in place; one they did change gets the new
  student version beside it as ``NN_topic.updated.ipynb``, and every run names it again while it is
  there, until they have compared the two (``course-lab diff NN``) and deleted it;
* a notebook the course has split or renumbered (``RETIRED``: the old 09 became 09, 10 and 11; 10 and 11
  became 12 and 13) stays as the student left it, its replacements are added, and every run names them
  while the old file is there, so the student knows where to copy their answers.

What was handed out is remembered in ``.course-release.json``: for each file, a hash of its text (has
the course changed it?) and of its cells' types and sources (has the student?). A manifest written
before the cells were hashed holds the text's hash only, and then only an unchanged file counts as
untouched.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course_utils.lab.release.owned_files import MANIFEST, RELEASE_MARKER, read_marker
from course_utils.lab.release.release import collect_notebooks, read_notebook, student_version

UPDATED_SUFFIX = ".updated.ipynb"
# A course notebook that no longer exists -> the notebooks that replaced it (a split, or a new number).
RETIRED = {
    "09_small_gpt.ipynb": ("09_build_gpt.ipynb", "10_train_gpt.ipynb", "11_generate_gpt.ipynb"),
    "10_todays_block.ipynb": ("12_todays_block.ipynb",),
    "11_inside_the_model.ipynb": ("13_inside_the_model.ipynb",),
}
_COPY = re.compile(r"^[0-9][0-9]_[^.]*\.ipynb$")


@dataclass(frozen=True)
class Handed:
    """What was handed out for one file: the hash of its text and of its cells (None: not recorded)."""

    text: str
    cells: str | None = None


@dataclass
class WorkspaceReport:
    """What ``update_workspace`` did, notebook by notebook (file names)."""

    folder: Path
    added: list[str] = field(default_factory=list)  # written because the student had no such notebook
    kept: list[str] = field(default_factory=list)  # the student's copy, left alone; the course has not changed it
    refreshed: list[str] = field(default_factory=list)  # changed by the course, never by the student: replaced
    updated_beside: list[tuple[str, str]] = field(default_factory=list)  # (theirs, the new version written beside)
    waiting: list[tuple[str, str]] = field(default_factory=list)  # (theirs, a new version beside it from before)
    retired: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (theirs, the course's replacements)

    def lines(self) -> list[str]:
        """The report as a student reads it."""
        out = []
        if self.added and not self.kept and not self.updated_beside and not self.refreshed:
            out.append(
                f"Made your copy of the course in {self.folder} ({len(self.added)} notebooks). Work there: "
                "later updates add new notebooks beside yours and never overwrite your work."
            )
        elif self.added:
            out.append(f"Added to {self.folder}: {', '.join(self.added)}")
        if self.refreshed:
            out.append(f"Brought up to date (you had not changed them): {', '.join(self.refreshed)}")
        for theirs, new in self.updated_beside:
            out.append(
                f"The course changed {theirs} since you got it. Your copy is left as it is; "
                f"the new version is beside it as {new}: compare them (`course-lab diff {theirs[:2]}`) "
                f"and copy over what you want, then delete {new}."
            )
        for theirs, new in self.waiting:
            out.append(
                f"Still waiting beside your {theirs}: the course's newer version {new}. Compare them "
                f"(`course-lab diff {theirs[:2]}`), copy over what you want, then delete {new}."
            )
        for theirs, new in self.retired:
            what = "split into" if len(new) > 1 else "renumbered as"
            out.append(
                f"The course {what} {_and(new)}: your {theirs} is the old version, left as it is. "
                f"Copy your answers from it into {'the new notebooks' if len(new) > 1 else 'the new one'}, "
                f"then delete {theirs}."
            )
        if self.kept and not (self.added or self.updated_beside or self.refreshed or self.waiting or self.retired):
            out.append(f"Your copy of the course in {self.folder} is up to date ({len(self.kept)} notebooks).")
        return out


def _and(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _cells_digest(nb: nbformat.NotebookNode) -> str:
    """sha256 of the cells' types and sources: what a student writes (outputs and metadata left out)."""
    return _digest(json.dumps([[cell.cell_type, cell.source] for cell in nb.cells]))


def handed(text: str) -> Handed:
    """The record of handing out ``text`` (a notebook's JSON)."""
    return Handed(_digest(text), _cells_digest(nbformat.reads(text, as_version=4)))


def untouched(path: Path, record: Handed | None) -> bool:
    """Whether the file at ``path`` is still what ``record`` says was handed out (its cells, or all its text)."""
    if record is None:
        return False
    try:
        text = path.read_text()
        if _digest(text) == record.text:
            return True
        return record.cells is not None and _cells_digest(nbformat.reads(text, as_version=4)) == record.cells
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):  # gone, or no longer a notebook
        return False


def student_notebooks(folder: Path) -> list[str]:
    """The student's course notebooks in ``folder`` (``NN_topic.ipynb``; never the ``.updated`` ones)."""
    return sorted(p.name for p in Path(folder).glob("[0-9][0-9]_*.ipynb") if _COPY.match(p.name))


def find_notebook(names: list[str], query: str) -> str:
    """The one of ``names`` that ``query`` means: ``"03"``, ``"03_attention"`` or ``"03_attention.ipynb"``
    -> ``"03_attention.ipynb"``; ``ValueError`` naming the choices when none or several match."""
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"notebook must be a name such as 03 or 03_attention, got {query!r}")
    query = query.strip().removesuffix(".ipynb")
    found = [n for n in names if n[: -len(".ipynb")] == query] or [n for n in names if n[:2] == query]
    if len(found) == 1:
        return found[0]
    choices = ", ".join(n[: -len(".ipynb")] for n in names) or "none"
    what = "matches several" if found else "matches none"
    raise ValueError(f"notebook {query!r} {what} of the notebooks here ({choices})")


def waiting_beside(folder: Path, name: str) -> list[str]:
    stem = name[: -len(".ipynb")]
    pattern = re.compile(rf"^{re.escape(stem)}\.updated(-[0-9]+)?\.ipynb$")
    return sorted((p.name for p in folder.glob(f"{stem}.updated*.ipynb") if pattern.match(p.name)), key=len)


def _free_beside(folder: Path, stem: str, handed_out: dict[str, Handed]) -> Path:
    """Where the new version of ``stem`` goes: ``stem.updated.ipynb`` unless the student has edited that file."""
    for n in range(1, 100):
        beside = folder / (stem + (UPDATED_SUFFIX if n == 1 else f".updated-{n}.ipynb"))
        if not beside.exists() or untouched(beside, handed_out.get(beside.name)):
            return beside
    raise ValueError(f"{folder}: too many {stem}.updated-N.ipynb files; delete the ones you no longer need")


def read_manifest(folder: Path) -> dict[str, Handed]:
    """What was handed out into ``folder``, by file name (empty without a readable manifest)."""
    try:
        data = json.loads((Path(folder) / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    found = {}
    for name, value in data.items():
        if isinstance(value, str):  # written by an older course-lab: the text's hash only
            found[name] = Handed(value)
        elif isinstance(value, dict) and isinstance(value.get("text"), str):
            cells = value.get("cells")
            found[name] = Handed(value["text"], cells if isinstance(cells, str) else None)
    return found


def _write_manifest(folder: Path, handed_out: dict[str, Handed]) -> None:
    data = {name: {"text": h.text, "cells": h.cells} for name, h in sorted(handed_out.items())}
    (folder / MANIFEST).write_text(json.dumps(data, indent=1) + "\n")


def _student_version_of(path: Path, source: Path) -> nbformat.NotebookNode:
    """The student's version of the notebook at ``path``: built from a solution notebook, or read as it is
    from a folder ``course-lab release`` wrote (its marker lists the file), which holds student versions
    already (a JupyterHub login from the version built at install: a hash and a copy, no torch import)."""
    nb = read_notebook(path)
    digest = (read_marker(source, RELEASE_MARKER, "release") or {}).get(path.name)
    if digest is not None and hashlib.sha256(path.read_bytes()).hexdigest() == digest:  # as release wrote it
        return nb
    return student_version(nb, path.name)


def update_workspace(source: Path, folder: Path, retired: dict | None = None) -> WorkspaceReport:
    """Bring ``folder`` (the student's copy) up to date with the course notebooks in ``source``.

    Never overwrites a notebook the student has changed; see the module docstring. Every student
    version is built (and checked for leaked solutions) before anything is written. ``retired`` (``RETIRED``
    by default) maps an old notebook's name to those that replaced it: the report names them while it is there.
    """
    retired = RETIRED if retired is None else retired
    source, folder = Path(source), Path(folder)
    if folder.resolve() == source.resolve():
        raise ValueError(f"folder must differ from source (both are {source})")
    versions = {path.name: _student_version_of(path, source) for path in collect_notebooks(source)}
    folder.mkdir(parents=True, exist_ok=True)
    handed_out = read_manifest(folder)
    report = WorkspaceReport(folder)
    for name, nb in versions.items():
        text = nbformat.writes(nb) + "\n"
        new, target, old = handed(text), folder / name, handed_out.get(name)
        if not target.exists():
            target.write_text(text)
            report.added.append(name)
        elif old is None or old.text == new.text:
            report.kept.append(name)  # the course has not changed it (or nothing says what was handed out)
        elif untouched(target, old):
            target.write_text(text)
            report.refreshed.append(name)
        else:
            beside = _free_beside(folder, name[: -len(".ipynb")], handed_out)
            beside.write_text(text)  # a file of ours (or one the student never edited): theirs is never touched
            handed_out[beside.name] = new
            report.updated_beside.append((name, beside.name))
        handed_out[name] = new
        just_written = {b for theirs, b in report.updated_beside if theirs == name}
        report.waiting += [(name, b) for b in waiting_beside(folder, name) if b not in just_written]
    for old, new in retired.items():
        if old not in versions and (folder / old).exists():
            report.retired.append((old, tuple(new)))
    _write_manifest(folder, handed_out)
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
