"""Stable names for the widgets of an executed notebook, so that rebuilding it (`make notebooks`)
does not rewrite its stored widget state.

Executing a notebook stores each widget's state in the notebook's metadata (JupyterLab draws the
widgets from it before anything runs), keyed by the id the kernel drew for the widget at random
(a uuid4; nbval ignores the ids in outputs for that reason). The state is written sorted by id, so
each run would rename and reorder all of it: 04's 184 widgets alone are a few thousand lines.
This renames the widgets in the order they are reached: those the cells display, cell by cell, then
the widgets each one refers to, depth first; widgets nothing displays follow, ordered by their
state. Example: ids 9f0c…, 31ab… become 00000000000000000000000000000001, …0002.

First (``keep_static_faces``), an output that carries a course widget's static face
(``course_utils/viz/static_face.py``) is stored as that face alone: its widget view and the widget's
state go. A stored widget view is drawn by JupyterLab only when trusted and by an HTML export only with
a script from the internet, and otherwise shows nothing or the widget's repr; the face shows
everywhere. Running the cell draws the live widget as before.

Usage: python notebooks/stable_widget_ids.py notebooks/NN_topic.ipynb [...]
"""

from __future__ import annotations

import json
import re
import sys

import nbformat

WIDGET_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")  # uuid4().hex, as ipywidgets names its models
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


FACE_CLASS = "course-static-face"


def _reachable(state: dict, roots) -> set[str]:
    seen: set[str] = set()
    todo = [r for r in roots if r in state]
    while todo:
        model = todo.pop()
        if model not in seen:
            seen.add(model)
            todo += [m for m in WIDGET_ID.findall(json.dumps(state[model])) if m in state]
    return seen


def keep_static_faces(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with each output that carries a static face stored as the face alone (no widget view),
    and without the state of the widgets only those outputs showed."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    faced, plain = [], []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html = data.get("text/html", "")
            if WIDGET_VIEW in data and FACE_CLASS in ("".join(html) if isinstance(html, list) else html):
                faced.append(data.pop(WIDGET_VIEW).get("model_id"))
            else:
                plain.append(data.get(WIDGET_VIEW, {}).get("model_id"))
    for model in _reachable(state, faced) - _reachable(state, plain):
        del state[model]
    return nb


def stable_widget_ids(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with its widgets renamed 1, 2, 3, … (32 hex digits) in the order described above."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    text = {model: json.dumps(value, sort_keys=True) for model, value in state.items()}
    order: list[str] = []

    def visit(model: str | None) -> None:
        if model in state and model not in order:
            order.append(model)
            for child in WIDGET_ID.findall(text[model]):
                visit(child)

    for cell in nb.cells:
        for output in cell.get("outputs", []):
            visit(output.get("data", {}).get(WIDGET_VIEW, {}).get("model_id"))
    for model in sorted(set(state) - set(order), key=lambda m: WIDGET_ID.sub("", text[m])):
        visit(model)
    names = {model: f"{index:032x}" for index, model in enumerate(order, start=1)}
    renamed = WIDGET_ID.sub(lambda match: names.get(match.group(), match.group()), json.dumps(nb))
    return nbformat.from_dict(json.loads(renamed))


if __name__ == "__main__":
    for path in sys.argv[1:]:
        nbformat.write(stable_widget_ids(keep_static_faces(nbformat.read(path, as_version=4))), path)
