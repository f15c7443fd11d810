"""Write the student version of the course from the solution notebooks.

Every solution region becomes a ``NotImplementedError`` stub, outputs, execution counts and widget
state are cleared, and file names are kept. Everything is checked before anything is written, so a
bad notebook never leaves half a release behind.

``out`` is never emptied or replaced: a new or empty folder, or one a previous release wrote, takes
the notebooks; a folder with anything else in it (a student's own copy, say) is refused, and a
released notebook someone has worked in since is never overwritten (``owned_files.py``).

A notebook is refused if a stub message, a hint of one of its exercises (``Exercise.hints``) or a
``<details>`` hint cell repeats its solutions' code (see ``leaks.py``).
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from course_utils.lab.release.leaks import find_leak
from course_utils.lab.release.owned_files import MANIFEST, RELEASE_MARKER, NotOursError, write_owned
from course_utils.lab.release.solutions import BEGIN, END, SolutionMarkupError, strip_solutions


class ReleaseError(ValueError):
    """A notebook cannot be released; the message names the file and the cell."""


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """Read and validate one notebook; ``ReleaseError`` naming the file if it is not one."""
    try:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several unrelated types for bad input
        raise ReleaseError(f"{path}: not a readable notebook ({type(exc).__name__}: {str(exc)[:200]})") from exc
    return nb


def _regions(source: str) -> list[str]:
    """The code inside each solution region of a cell."""
    regions, current = [], None
    for line in source.splitlines():
        if BEGIN.match(line):
            current = []
        elif END.match(line) and current is not None:
            regions.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return regions


def _exercises_of(nb: nbformat.NotebookNode) -> dict:
    """The course exercises a notebook's metadata lists, by name (unknown names are skipped)."""
    names = nb.metadata.get("course", {}).get("exercises", {})
    if not names:
        return {}
    from course_utils.checks import all_exercises  # imported only when a notebook has exercises

    known = all_exercises()
    return {n: known[n] for n in names if n in known}


def check_no_leaks(nb: nbformat.NotebookNode, student: nbformat.NotebookNode, name: str) -> None:
    """``ReleaseError`` if a stub, an exercise hint, a mistake's or property's message, or a ``<details>`` cell
    repeats a solution's code."""
    solutions = [r for cell in nb.cells if cell.cell_type == "code" for r in _regions(cell.source)]
    if not solutions:
        return
    texts = []
    for index, cell in enumerate(student.cells):
        if cell.cell_type == "code":
            texts += [
                (f"the stub in cell {index}", line)
                for line in cell.source.splitlines()
                if "NotImplementedError(" in line
            ]
        elif "<details" in cell.source:
            texts.append((f"the hint cell {index}", cell.source))
    for exercise_name, exercise in _exercises_of(nb).items():
        texts += [(f"hint {level} of exercise {exercise_name!r}", text) for level, text in enumerate(exercise.hints, 1)]
        # what a check prints after a wrong answer is a hint too: a student sees it by handing in a mistake
        texts += [
            (f"the message for mistake {m.name!r} of exercise {exercise_name!r}", m.hint) for m in exercise.mistakes
        ]
        texts += [
            (f"the message for property {p.name!r} of exercise {exercise_name!r}", p.hint) for p in exercise.properties
        ]
    for where, text in texts:
        leak = find_leak(text, solutions)
        if leak is not None:
            raise ReleaseError(
                f"{name}: {where} gives the solution away: it repeats {leak!r} from a solution; "
                "reword it so it teaches without the code"
            )


def student_version(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """A copy of ``nb`` with solutions stubbed and every output and widget state removed."""
    student = nbformat.from_dict(nb)  # deep copy
    student.metadata.pop("widgets", None)
    exercises = {ex.expected_name: n for n, ex in _exercises_of(nb).items()}
    for index, cell in enumerate(student.cells):
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        try:
            cell.source = strip_solutions(cell.source, where=f"{name}, cell {index}", exercises=exercises)
        except SolutionMarkupError as exc:
            raise ReleaseError(str(exc)) from exc
        cell.outputs = []
        cell.execution_count = None
    check_no_leaks(nb, student, name)
    return student


def collect_notebooks(source: Path) -> list[Path]:
    """The notebooks to release: ``source`` itself if it is a notebook, else the ``*.ipynb`` in it."""
    if not source.exists():
        raise ReleaseError(f"{source}: no such file or directory")
    if source.is_file():
        if source.suffix != ".ipynb":
            raise ReleaseError(f"{source}: not a notebook (expected a .ipynb file or a folder of them)")
        return [source]
    notebooks = sorted(p for p in source.glob("*.ipynb") if not p.name.startswith("."))
    if not notebooks:
        raise ReleaseError(f"{source}: no .ipynb files found")
    return notebooks


def release(source: Path, out: Path) -> list[Path]:
    """Write the student notebooks for ``source`` into ``out`` and return their paths.

    ``ReleaseError`` (nothing written) if ``out`` holds files a release did not write, or a released
    notebook changed since; see the module docstring."""
    source, out = Path(source), Path(out)
    converted = [(path.name, student_version(read_notebook(path), path.name)) for path in collect_notebooks(source)]
    files = {name: (nbformat.writes(nb) + "\n").encode() for name, nb in converted}
    try:
        return write_owned(out, files, marker=RELEASE_MARKER, command="release")
    except NotOursError as exc:
        if (out / MANIFEST).exists():
            raise ReleaseError(
                f"{exc} {out} is a student's own copy of the course (`make lab` made it): "
                f"`course-lab update --folder {out}` brings it up to date without overwriting their work."
            ) from exc
        raise ReleaseError(str(exc)) from exc
