"""The frame every course widget shares: its output areas, and one redraw wired to its controls.

``readout_area()`` and ``figure_area()`` make the text readout (an ``HTML``) and the figure area (an
``Output``) with the CSS classes the browser tests find them by (``course-readout``, ``course-figure``).
``live_widget(children, "course-x", controls, redraw)`` calls ``redraw()`` inside ``redraw_lock()``
once now and again whenever a control's ``value`` changes, then returns a ``CourseWidget`` (a
``VBox(children)`` with the widget's class) whose stored output also carries its static face
(``static_face.py``): what an HTML export or an un-run notebook shows. ``redraw`` reads the controls
itself: it runs inside the lock, so the callback that runs last always shows the final state (see
``drawing.py``).
Example: ``live_widget([slider, readout], "course-welcome", [slider], lambda: show(slider.value))``.
Leaves out the controls, the layout of the children and what is drawn: each widget's own module.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import ipywidgets as widgets

from course_utils.viz.drawing import redraw_lock
from course_utils.viz.static_face import PLAIN_TEXT, static_face


def readout_area() -> widgets.HTML:
    """An empty text readout with the class ``course-readout``."""
    readout = widgets.HTML()
    readout.add_class("course-readout")
    return readout


def figure_area() -> widgets.Output:
    """An empty ``Output`` for the widget's figure, with the class ``course-figure`` (fill it with ``show_figure``)."""
    figure = widgets.Output()
    figure.add_class("course-figure")
    return figure


class CourseWidget(widgets.VBox):
    """A course widget's box: displayed, it is the live widget plus its static face (``text/html``)."""

    def __init__(self, children: Sequence[widgets.Widget], controls: Sequence[widgets.Widget], **kwargs) -> None:
        super().__init__(list(children), **kwargs)
        self._face_controls = list(controls)

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = static_face(self, self._face_controls)
        bundle["text/plain"] = PLAIN_TEXT
        return bundle


def live_widget(
    children: Sequence[widgets.Widget], css_class: str, controls: Iterable[widgets.Widget], redraw: Callable[[], None]
) -> CourseWidget:
    """``CourseWidget(children)`` of class ``css_class``, drawn by ``redraw()`` now and on every control's change.

    Every call of ``redraw`` holds ``redraw_lock()``; a callback that must itself redraw (a preset
    that sets several controls) can take the lock and call ``redraw()`` directly.
    """

    def _on_change(_change=None) -> None:
        with redraw_lock():  # read the controls inside the lock: the last callback shows the final state
            redraw()

    controls = list(controls)
    for control in controls:
        control.observe(_on_change, names="value")
    _on_change()
    box = CourseWidget(children, controls)
    box.add_class(css_class)
    return box
