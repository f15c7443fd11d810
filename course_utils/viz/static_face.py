"""A course widget's static face: its starting state as plain HTML, for every place without a kernel.

A widget is drawn by the kernel. An HTML export, nbviewer, GitHub, or JupyterLab before the cell has
run (an untrusted notebook renders only "safe" output types) cannot draw it and used to show the
widget's Python repr, ``VBox(children=(FloatSlider(...``. So a course widget's output also carries
``text/html``: a line naming the controls and their starting values, the widget's text readout and
its figure as an inline PNG (``static_face(box, controls)``). A live kernel still draws the widget
(JupyterLab prefers the widget view to HTML in a trusted notebook).

``FACE_CLASS`` marks the face; ``notebooks/stable_widget_ids.py`` drops the stored widget state of
outputs that carry one, so an HTML export shows the face instead of a widget it cannot load offline.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Iterator

import ipywidgets as widgets

FACE_CLASS = "course-static-face"
PLAIN_TEXT = "Interactive course widget: run the cell to use it."
_MAX_CONTROLS = 12
_CHOICES = (widgets.Dropdown, widgets.SelectionSlider, widgets.RadioButtons, widgets.ToggleButtons, widgets.Select)


def _descendants(widget: widgets.Widget) -> Iterator[widgets.Widget]:
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _descendants(child)


def _with_class(box: widgets.Widget, css_class: str) -> list[widgets.Widget]:
    return [w for w in _descendants(box) if css_class in getattr(w, "_dom_classes", ())]


def _setting(control: widgets.Widget) -> str | None:
    """``"name = value"`` as the control shows it: a choice (a dropdown, a selection slider) by its label,
    since its value may be an index (06's sparsity slider holds 11 and shows 0.990); a label that already
    starts with the name stands alone (``"layer 0"``, not ``"layer = layer 0"``)."""
    name = getattr(control, "description", "")
    if not name or isinstance(control, widgets.ToggleButton):
        return None
    value = getattr(control, "value", None)
    if isinstance(control, _CHOICES) and control.label is not None:
        if control.label.startswith(f"{name} "):
            return html.escape(control.label)
        value = control.label
    if isinstance(value, str) and len(value) > 40:
        value = value[:40] + "…"
    return f"{html.escape(str(name))} = {html.escape(str(value))}"


def static_face(box: widgets.Widget, controls: Iterable[widgets.Widget]) -> str:
    """The face of ``box`` as it is now (its starting state when displayed): controls, readout, figure."""
    settings = [s for s in map(_setting, controls) if s][:_MAX_CONTROLS]
    parts = [
        f'<div class="{FACE_CLASS}" style="border:1px solid #c8c8c8;border-radius:4px;padding:6px 8px">',
        '<div style="font-size:0.85em;opacity:0.75">Interactive widget, shown as it starts'
        + (f" ({'; '.join(settings)})" if settings else "")
        + ": run the cell to change it.</div>",
    ]
    parts += [readout.value for readout in _with_class(box, "course-readout") if readout.value]
    for figure in _with_class(box, "course-figure"):
        png = getattr(figure, "course_png", None)
        if png:
            data = base64.b64encode(png).decode("ascii")
            parts.append(f'<img alt="the widget\'s figure at its starting state" src="data:image/png;base64,{data}"/>')
    parts.append("</div>")
    return "\n".join(parts)
