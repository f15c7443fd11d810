"""Progress bars in a stored notebook: the text beside the widget names the work, never tqdm's first
frame ("0%"), and the widget's saved state is the finished bar."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course_utils.env.notebook_run import CourseNotebookClient
from course_utils.env.progress import WIDGET_VIEW, progress_bar, stored_text


def test_stored_text_names_the_work():
    assert stored_text("training", 800, "step") == "training: 800 steps (a progress bar while the cell runs)"
    assert stored_text("BPE merges", 1786, "merge") == "BPE merges: 1,786 merges (a progress bar while the cell runs)"
    assert stored_text("runs", 1, "run") == "runs: 1 run (a progress bar while the cell runs)"
    assert stored_text("pairs", None, "chunk") == "pairs: chunks (a progress bar while the cell runs)"


def test_outside_jupyter_it_is_plain_tqdm(capsys):
    assert sum(progress_bar(range(5), desc="work")) == 10


@pytest.mark.parametrize(
    "kwargs, error",
    [({"desc": ""}, TypeError), ({"desc": 3}, TypeError), ({"desc": "x", "total": -1}, ValueError),
     ({"desc": "x", "total": 2.5}, ValueError)],
)
def test_bad_arguments_are_named(kwargs, error):
    with pytest.raises(error, match="desc|total"):
        progress_bar(range(3), **kwargs)


def test_in_a_notebook_the_stored_output_reads_right():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from course_utils.env.progress import progress_bar\n"
        "for _ in progress_bar(range(40), desc='toy models'):\n    pass\n"
        "with progress_bar(total=3, desc='runs', unit='run') as bar:\n    bar.update(3)"
    )]
    CourseNotebookClient(nb, kernel_name="python3", timeout=120).execute()
    shown = [o for o in nb.cells[0].outputs if o.output_type == "display_data"]
    assert [o.data["text/plain"] for o in shown] == [
        "toy models: 40 steps (a progress bar while the cell runs)",
        "runs: 3 runs (a progress bar while the cell runs)",
    ]
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    for output, total in zip(shown, (40, 3)):
        box = state[output.data[WIDGET_VIEW]["model_id"]]["state"]
        bar = state[box["children"][1].removeprefix("IPY_MODEL_")]["state"]
        assert (bar["value"], bar["max"], bar["bar_style"]) == (total, total, "success")


@pytest.mark.parametrize("path", sorted(Path(__file__).resolve().parents[1].glob("notebooks/[0-9][0-9]_*.ipynb")),
                         ids=lambda p: p.name)
def test_no_committed_notebook_stores_an_unfinished_bar(path):
    """Issue #26: a reader of a stored notebook never sees training that looks as if it never ran: no printed
    tqdm frame at 0%, and every stored progress widget is full (value == max)."""
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
            assert not re.search(r"(^|\s)0%\|", text), f"{path.name}: a stored 0% bar: {text[:120]!r}"
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for model in state.values():
        if model["model_name"] in ("FloatProgressModel", "IntProgressModel"):
            assert model["state"].get("value") == model["state"].get("max"), f"{path.name}: {model['state']}"
