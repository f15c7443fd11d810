"""Export the solution notebooks for nbgrader (JupyterHub) and for otter-grader (Gradescope).

``export(source, out, "nbgrader")`` writes nbgrader's course layout: ``out/source/<stem>/<name>.ipynb``
plus ``out/nbgrader_config.py``. Each exercise's solution cell is marked as an nbgrader solution
cell, and one autograded, locked grade cell per exercise follows its check cell, worth the
exercise's points: it asserts the course's public check, and (between nbgrader's
``### BEGIN/END HIDDEN TESTS``) the same exercise on the hidden seeds.

``export(source, out, "otter")`` writes otter-assign masters: ``out/<stem>/<name>.ipynb`` with an
``# ASSIGNMENT CONFIG`` cell and, per exercise, a question block (``# BEGIN QUESTION`` with the
points) holding the solution cell and self-contained OK-format test cells (each imports the check it
needs; the seed-1 and seed-2 cells are ``# HIDDEN``). ``otter assign`` turns a master into the
student and autograder notebooks.

Neither ever deletes or replaces anything (``owned_files.py``): ``out`` must be new, empty, a previous
export of the same kind, or (nbgrader) an nbgrader course folder, where the export adds
``source/<stem>/`` beside the instructor's assignments, gradebook and submissions and leaves their
own ``nbgrader_config.py`` alone. An assignment folder it did not write is refused, and so is a file
of a previous export edited since.

In both, ``# HINT:`` lines move just above their solution region so the student version keeps them.
Both platforms run tests inside the student's kernel, so they do not get the isolation of
``course-lab grade``; the grade and test cells call the same ``Exercise`` checks.

Leaves out: installing either platform (they are not dependencies of the course).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_output, new_raw_cell

from course_utils.checks import all_exercises
from course_utils.checks.outcome import HIDDEN_SEEDS
from course_utils.lab.release.owned_files import EXPORT_MARKER, NotOursError, read_marker, write_owned
from course_utils.lab.release.release import collect_notebooks, read_notebook
from course_utils.lab.release.solutions import BEGIN, END, HINT, has_solution

NBGRADER_CONFIG = '''"""nbgrader configuration written by `course-lab export --to nbgrader`."""
c = get_config()  # noqa: F821 (provided by nbgrader)
c.CourseDirectory.root = "."
c.ExecutePreprocessor.timeout = 300
'''
GRADE_CELL = """# Graded test for `{exercise}` ({points:g} points): the course's own check on the public
# and hidden cases.
from course_utils.checks import get_exercise

_verdict = get_exercise({exercise!r}).check({fn})
print(_verdict)
assert _verdict.passed, str(_verdict)
### BEGIN HIDDEN TESTS
for _seed in {seeds!r}:
    _verdict = get_exercise({exercise!r}).check({fn}, seed=_seed)
    assert _verdict.passed, f"hidden case (seed {{_seed}}): {{_verdict}}"
### END HIDDEN TESTS"""
OTTER_TEST = """{hidden}from course_utils.checks import get_exercise
get_exercise({exercise!r}).check({fn}, seed={seed}).passed"""


def hoist_hints(source: str) -> str:
    """Move ``# HINT:`` lines inside a solution region to just above it (``# BEGIN SOLUTION`` line)."""
    lines, out, region_start = source.splitlines(), [], None
    for line in lines:
        if BEGIN.match(line):
            region_start = len(out)
            out.append(line)
        elif END.match(line):
            region_start = None
            out.append(line)
        elif region_start is not None and HINT.match(line):
            indent = BEGIN.match(out[region_start]).group("indent")
            out.insert(region_start, f"{indent}# Hint: {HINT.match(line).group('text').strip()}")
            region_start += 1
        else:
            out.append(line)
    return "\n".join(out)


def _exercise_places(nb: nbformat.NotebookNode) -> list[tuple[str, str, float, int, int]]:
    """(exercise, function name, points, solution cell, check cell) for each exercise in the metadata."""
    registry = all_exercises()
    places = []
    for exercise, spec in nb.metadata.get("course", {}).get("exercises", {}).items():
        if exercise not in registry:
            raise ValueError(
                f"notebook metadata lists exercise {exercise!r}, which has no check in course_utils.checks"
            )
        fn = registry[exercise].expected_name
        defines = re.compile(rf"^(?:def|class)\s+{re.escape(fn)}\b", re.MULTILINE)
        solution = next(
            (
                i
                for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and has_solution(c.source) and defines.search(c.source)
            ),
            None,
        )
        if solution is None:
            raise ValueError(f"no solution cell defines `{fn}` (exercise {exercise!r})")
        check = next(
            (
                i
                for i, c in enumerate(nb.cells)
                if i > solution and c.cell_type == "code" and f"check_{exercise}({fn})" in c.source
            ),
            solution,
        )
        places.append((exercise, fn, float(spec.get("points", 1)), solution, check))
    return places


def _clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(nb)  # deep copy
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code" and has_solution(cell.source):
            cell.source = hoist_hints(cell.source)
    return nb


def to_nbgrader(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The nbgrader source version of one course notebook."""
    places = _exercise_places(nb)
    nb = _clean(nb)
    for exercise, fn, points, solution, check in sorted(places, key=lambda p: p[4], reverse=True):
        nb.cells[solution].metadata["nbgrader"] = {
            "grade": False,
            "solution": True,
            "locked": False,
            "task": False,
            "grade_id": f"{exercise}_solution",
            "schema_version": 3,
        }
        grade = new_code_cell(GRADE_CELL.format(exercise=exercise, fn=fn, points=points, seeds=HIDDEN_SEEDS))
        grade.metadata["nbgrader"] = {
            "grade": True,
            "solution": False,
            "locked": True,
            "task": False,
            "points": points,
            "grade_id": f"{exercise}_test",
            "schema_version": 3,
        }
        nb.cells.insert(check + 1, grade)
    return nb


def to_otter(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """The otter-assign master version of one course notebook."""
    places = _exercise_places(nb)
    nb = _clean(nb)
    for exercise, fn, points, solution, _ in sorted(places, key=lambda p: p[3], reverse=True):
        tests = []
        for seed in (0, *HIDDEN_SEEDS):
            cell = new_code_cell(
                OTTER_TEST.format(hidden="# HIDDEN\n" if seed else "", exercise=exercise, fn=fn, seed=seed)
            )
            cell.outputs = [new_output("execute_result", data={"text/plain": "True"}, execution_count=None)]
            tests.append(cell)
        block = [
            new_raw_cell(f"# BEGIN QUESTION\nname: {exercise}\npoints: {points:g}"),
            new_raw_cell("# BEGIN SOLUTION"),
            nb.cells[solution],
            new_raw_cell("# END SOLUTION"),
            new_raw_cell("# BEGIN TESTS"),
            *tests,
            new_raw_cell("# END TESTS"),
            new_raw_cell("# END QUESTION"),
        ]
        nb.cells[solution : solution + 1] = block
    config = f"# ASSIGNMENT CONFIG\nname: {Path(name).stem}\nexport_cell: false\ncheck_all_cell: false\n"
    nb.cells.insert(0, new_raw_cell(config))
    return nb


def is_nbgrader_course(folder: Path) -> bool:
    """Whether ``folder`` looks like an nbgrader course (its config, its gradebook or its ``source/``)."""
    return any((folder / name).exists() for name in ("nbgrader_config.py", "gradebook.db", "source"))


def export(source: Path, out: Path, to: str) -> list[Path]:
    """Write every notebook in ``source`` for ``to`` ('nbgrader' or 'otter') into ``out``; the paths written.

    ``ValueError`` (nothing written) where that would touch a file the export did not write: see the
    module docstring."""
    if to not in ("nbgrader", "otter"):
        raise ValueError(f"to must be 'nbgrader' or 'otter', got {to!r}")
    out = Path(out)
    notebooks = [(p, read_notebook(p)) for p in collect_notebooks(Path(source))]
    prefix = "source/" if to == "nbgrader" else ""
    files = {
        f"{prefix}{p.stem}/{p.name}": (
            nbformat.writes(to_nbgrader(nb) if to == "nbgrader" else to_otter(nb, p.name)) + "\n"
        ).encode()
        for p, nb in notebooks
    }
    if to == "nbgrader" and (not (out / "nbgrader_config.py").exists() or _ours(out, "nbgrader_config.py")):
        files["nbgrader_config.py"] = NBGRADER_CONFIG.encode()  # an instructor's own config is theirs
    try:
        written = write_owned(
            out,
            files,
            marker=EXPORT_MARKER,
            command=f"export --to {to}",
            may_join=is_nbgrader_course if to == "nbgrader" else None,
        )
    except NotOursError as exc:
        raise ValueError(str(exc)) from exc
    return [path for path in written if path.suffix == ".ipynb"]


def _ours(out: Path, rel: str) -> bool:
    return rel in (read_marker(out, EXPORT_MARKER, "export --to nbgrader") or {})


def config_note(out: Path) -> str | None:
    """What to add to an instructor's own ``nbgrader_config.py``, which the export leaves alone (else None)."""
    if not (Path(out) / "nbgrader_config.py").exists() or _ours(Path(out), "nbgrader_config.py"):
        return None
    return (
        f"kept your own {Path(out) / 'nbgrader_config.py'}: the course's cells need more than nbgrader's default "
        "30 s, so make sure it sets c.ExecutePreprocessor.timeout = 300"
    )
