"""Every notebook is written as text: `notebooks/src/NN_topic.py` (jupytext's percent format) is the
only file anyone edits, and `make notebooks` builds and executes `notebooks/NN_topic.ipynb` from it
(CONTRIBUTING.md, "Editing a notebook"). A committed notebook must therefore agree with its source:
the same cells in the same order, each with the same type, source and metadata (its tags, such as
nbval-ignore-output), and the same notebook metadata where the course reads it (`course`: the
exercises and their points, the grading timeout; the kernel). Outputs are not compared here: nbval
does that."""

from __future__ import annotations

import importlib.util
import shutil
import uuid
from pathlib import Path

import jupytext
import nbformat
import pytest

from notebook_tools import NOTEBOOK_DIR, course_notebooks, read

NOTEBOOK_METADATA = ("course", "kernelspec")
CELL_FIELDS = ("cell_type", "source", "metadata")


def source_of(notebook: Path) -> Path:
    return notebook.parent / "src" / f"{notebook.stem}.py"


def unpaired(folder: Path) -> list[str]:
    """A notebook without a source or a source without a notebook, in ``folder`` and ``folder/src``."""
    notebooks = {path.stem for path in folder.glob("[0-9][0-9]_*.ipynb")}
    sources = {path.stem for path in (folder / "src").glob("[0-9][0-9]_*.py")}
    return ([f"{name}.ipynb has no source src/{name}.py" for name in sorted(notebooks - sources)]
            + [f"src/{name}.py has no notebook {name}.ipynb" for name in sorted(sources - notebooks)])


def disagreements(notebook: Path) -> list[str]:
    """Where ``notebook`` differs from the notebook its source converts to (outputs aside)."""
    built = nbformat.reads(jupytext.writes(jupytext.read(source_of(notebook)), fmt="ipynb"), as_version=4)
    committed = read(notebook)
    problems = [f"metadata {key!r}: source {built.metadata.get(key)!r}, notebook {committed.metadata.get(key)!r}"
                for key in NOTEBOOK_METADATA if built.metadata.get(key) != committed.metadata.get(key)]
    if len(built.cells) != len(committed.cells):
        problems.append(f"{len(built.cells)} cells in the source, {len(committed.cells)} in the notebook")
    for index, (mine, theirs) in enumerate(zip(built.cells, committed.cells)):
        for field in CELL_FIELDS:
            if mine[field] != theirs[field]:
                first_line = (mine.source.splitlines() or [""])[0][:60]
                difference = _difference(mine[field], theirs[field])
                problems.append(f"cell {index} ({first_line!r}): {field} differs: {difference}")
    return problems


def _difference(mine, theirs) -> str:
    """The two values, or for two texts their first line that differs."""
    if isinstance(mine, str) and isinstance(theirs, str):
        ours, committed = mine.splitlines() + ["(end)"], theirs.splitlines() + ["(end)"]
        line = next((i for i, (a, b) in enumerate(zip(ours, committed)) if a != b), None)
        if line is not None:  # else they differ in line endings only
            return f"line {line + 1}: source {ours[line]!r:.100}, notebook {committed[line]!r:.100}"
    return f"source {mine!r:.100}, notebook {theirs!r:.100}"


def test_every_notebook_has_a_source_and_every_source_a_notebook():
    assert course_notebooks(), "no notebooks found"
    assert not unpaired(NOTEBOOK_DIR)


@pytest.mark.parametrize("path", course_notebooks(), ids=lambda p: p.name)
def test_notebook_agrees_with_its_source(path):
    if not source_of(path).exists():
        pytest.fail(f"{path.name} has no source {source_of(path).relative_to(NOTEBOOK_DIR)}")
    problems = disagreements(path)
    assert not problems, (f"{path.name} disagrees with src/{path.stem}.py: edit the source and run "
                          f"`make notebooks NB={path.stem}`\n  " + "\n  ".join(problems[:10]))


PLANTED_SOURCE = '''# ---
# jupyter:
#   course:
#     exercises:
#       stable_softmax: {difficulty: 1, minutes: 10, points: 2}
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # A planted notebook

# %%
x = 1

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a planted timing.
print(x)
'''


def _planted_pair(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "05_planted.py").write_text(PLANTED_SOURCE)
    notebook = tmp_path / "05_planted.ipynb"
    jupytext.write(jupytext.read(tmp_path / "src" / "05_planted.py"), notebook, fmt="ipynb")
    return notebook


def _edit(notebook: Path, change) -> None:
    nb = read(notebook)
    change(nb)
    nbformat.write(nb, str(notebook))


def test_a_planted_pair_agrees_until_one_side_changes(tmp_path):
    notebook = _planted_pair(tmp_path)
    assert not disagreements(notebook) and not unpaired(tmp_path)
    pristine = notebook.read_text()

    def edit_source(nb):
        nb.cells[1].source = "x = 2"

    def swap_cells(nb):
        nb.cells[1], nb.cells[2] = nb.cells[2], nb.cells[1]

    def drop_tag(nb):
        nb.cells[2].metadata = {}

    def change_type(nb):
        nb.cells[0].cell_type = "raw"

    def change_points(nb):
        nb.metadata.course["exercises"]["stable_softmax"]["points"] = 3

    def add_cell(nb):
        nb.cells.append(nbformat.v4.new_code_cell("y = 2"))

    expected = {edit_source: "cell 1 ('x = 1'): source differs", swap_cells: "cell 1 ('x = 1'): source differs",
                drop_tag: "cell 2 ('# Output not compared by the tests: a planted timing.'): metadata differs",
                change_type: "cell 0 ('# A planted notebook'): cell_type differs",
                change_points: "metadata 'course'", add_cell: "3 cells in the source, 4 in the notebook"}
    for change, message in expected.items():
        notebook.write_text(pristine)
        _edit(notebook, change)
        problems = disagreements(notebook)
        assert any(problem.startswith(message) for problem in problems), (change.__name__, problems)


def test_a_notebook_without_a_source_and_a_source_without_a_notebook_are_reported(tmp_path):
    notebook = _planted_pair(tmp_path)
    shutil.copy(notebook, tmp_path / "06_orphan.ipynb")
    shutil.copy(tmp_path / "src" / "05_planted.py", tmp_path / "src" / "07_orphan.py")
    assert unpaired(tmp_path) == ["06_orphan.ipynb has no source src/06_orphan.py",
                                  "src/07_orphan.py has no notebook 07_orphan.ipynb"]


def _stable_widget_ids():
    spec = importlib.util.spec_from_file_location("stable_widget_ids", NOTEBOOK_DIR / "stable_widget_ids.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", course_notebooks(), ids=lambda p: p.name)
def test_committed_widget_ids_are_the_stable_ones(path):
    """A notebook executed outside `make notebooks` keeps the kernel's random widget ids."""
    nb = read(path)
    assert _stable_widget_ids().stable_widget_ids(nb) == nb, f"run `make notebooks NB={path.stem}`"


def _widget_notebook(ids: list[str], order: list[int]) -> nbformat.NotebookNode:
    """A displayed box holding a slider (with its layout), and a widget nothing displays."""
    box, slider, layout, hidden = ids
    state = {box: {"model_name": "VBoxModel", "state": {"children": [f"IPY_MODEL_{slider}"]}},
             slider: {"model_name": "FloatSliderModel", "state": {"layout": f"IPY_MODEL_{layout}"}},
             layout: {"model_name": "LayoutModel", "state": {}},
             hidden: {"model_name": "LabelModel", "state": {"value": "not shown"}}}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("box", id="cell", outputs=[nbformat.v4.new_output(
        "display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": box}, "text/plain": "VBox()"})])]
    widgets = {ids[i]: state[ids[i]] for i in order}  # the state in another order, as another run may store it
    nb.metadata.widgets = {"application/vnd.jupyter.widget-state+json": {"state": widgets}}
    return nb


def test_widget_ids_do_not_depend_on_the_kernels_random_ones():
    stable = _stable_widget_ids().stable_widget_ids
    one = stable(_widget_notebook([uuid.uuid4().hex for _ in range(4)], [0, 1, 2, 3]))
    other = stable(_widget_notebook([uuid.uuid4().hex for _ in range(4)], [3, 2, 1, 0]))
    assert nbformat.writes(one) == nbformat.writes(other)
    name = [f"{n:032x}" for n in range(1, 5)]
    state = one.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    assert one.cells[0].outputs[0].data["application/vnd.jupyter.widget-view+json"]["model_id"] == name[0]
    assert state[name[0]]["state"]["children"] == [f"IPY_MODEL_{name[1]}"]  # reached from the box, depth first
    assert state[name[1]]["state"]["layout"] == f"IPY_MODEL_{name[2]}"
    assert state[name[3]]["model_name"] == "LabelModel"  # displayed by nothing: last
