"""A course widget's static face (``course_utils.viz.static_face``): what its stored output shows
where no kernel draws it. The face names the controls at their starting values, repeats the readout
and embeds the figure the widget drew (the same PNG bytes); the stored notebooks keep the face alone,
never a widget repr such as ``VBox(children=(...``."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import ipywidgets as widgets
import pytest
from PIL import Image

from course_utils.viz.attention import dk_saturation_viewer
from course_utils.viz.static_face import FACE_CLASS, PLAIN_TEXT
from course_utils.viz.welcome import softmax_gap_slider

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PNG = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def _bundle(box: widgets.Widget) -> dict:
    return box._repr_mimebundle_()


def test_a_text_widget_face_is_its_settings_and_readout():
    box = softmax_gap_slider(3.0)
    bundle = _bundle(box)
    assert WIDGET_VIEW in bundle and bundle["text/plain"] == PLAIN_TEXT
    face = bundle["text/html"]
    assert FACE_CLASS in face and "logit gap = 3.0" in face
    readout = next(w for w in box.children if "course-readout" in w._dom_classes)
    assert readout.value and readout.value in face and not PNG.search(face)


def test_a_figure_widget_face_embeds_the_drawn_figure_and_follows_the_state():
    box = dk_saturation_viewer(["the", "cat", "sat"], d_k=16)
    figure = next(w for w in box.children if "course-figure" in w._dom_classes)
    (png,) = PNG.findall(_bundle(box)["text/html"])
    assert base64.b64decode(png) == figure.course_png
    pixels = Image.open(io.BytesIO(figure.course_png)).convert("L")
    assert pixels.getextrema()[0] < 128 < pixels.getextrema()[1], "the face's figure is blank"
    slider = next(w for w in box.children if isinstance(w, widgets.IntSlider))
    slider.value = 256  # the face shows the state at display time
    face = _bundle(box)["text/html"]
    assert "d_k = 256" in face and base64.b64decode(PNG.findall(face)[0]) != base64.b64decode(png)


def _stored_outputs():
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text())["cells"]):
            for output in cell.get("outputs", []):
                yield path.stem, index, output.get("data", {})


@pytest.mark.parametrize("notebook", sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
def test_stored_notebooks_show_faces_never_a_widget_repr(notebook):
    for name, index, data in _stored_outputs():
        if name != notebook:
            continue
        plain = "".join(data.get("text/plain", ""))
        html = "".join(data.get("text/html", ""))
        assert not re.match(r"[HV]Box\(children=", plain), f"{name} cell {index} stores a widget repr: {plain[:60]}"
        if FACE_CLASS in html:
            assert WIDGET_VIEW not in data, f"{name} cell {index}: a face must be stored alone (no widget view)"


def _face_settings(face: str) -> str:
    return re.search(r"shown as it starts \(([^)]*)\)", face).group(1)


def test_a_choice_shows_its_label_not_the_index_it_holds():
    from course_utils.superposition.toy_models import ToyModel
    from course_utils.viz.mlp_superposition import sparsity_explorer

    box = sparsity_explorer(ToyModel(3, 5, 2, sparsity=[0.0, 0.5, 0.9], seed=0))
    assert _face_settings(_bundle(box)["text/html"]) == "sparsity = 0.900"  # the slider holds index 2
    next(w for w in box.children if isinstance(w, widgets.SelectionSlider)).value = 0
    assert _face_settings(_bundle(box)["text/html"]) == "sparsity = 0.000"


def test_the_head_viewers_dropdowns_read_as_their_labels():
    import torch

    from course_utils.viz.head_viewer import attention_viewer

    patterns = [torch.full((2, 3, 3), 1 / 3), torch.full((2, 3, 3), 1 / 3)]
    assert _face_settings(_bundle(attention_viewer(patterns, ["a", "b", "c"]))["text/html"]) == "layer 0; head 0; query = 2"


def test_notebook_06_stored_face_reads_the_sparsity_its_readout_and_figure_show():
    faces = [html for name, _, data in _stored_outputs() if name == "06_mlp_superposition"
             for html in ["".join(data.get("text/html", ""))] if FACE_CLASS in html]
    (face,) = [f for f in faces if "sparsity = " in f]
    shown = re.fullmatch(r"sparsity = ([0-9.]+)", _face_settings(face)).group(1)
    assert f"sparsity S = {shown}<br>" in face  # the readout of the instance the figure draws
