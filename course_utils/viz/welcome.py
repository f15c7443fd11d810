"""The welcome notebook's small widget: a slider that proves widgets render, and previews softmax.

``softmax_gap_slider()`` -> a VBox with a slider for the gap between two logits and a readout of
the two probabilities softmax gives them. The callback only calls ``course_utils.softmax``.
"""

from __future__ import annotations

import ipywidgets as widgets
import torch

from course_utils.softmax import softmax
from course_utils.viz.scaffold import live_widget, readout_area


def softmax_gap_readout(gap: float) -> str:
    """``softmax_gap_readout(0.0)`` -> ``'logits [0.000, 0.000] → probabilities [0.500, 0.500]'``."""
    probs = softmax(torch.tensor([gap, 0.0], dtype=torch.float64)).tolist()
    return f"logits [{gap:.3f}, 0.000] → probabilities [{probs[0]:.3f}, {probs[1]:.3f}]"


def softmax_gap_slider(initial: float = 2.0) -> widgets.VBox:
    """A slider over the gap between two logits with a live readout of their softmax."""
    slider = widgets.FloatSlider(value=initial, min=-10.0, max=10.0, step=0.1, description="logit gap")
    slider.add_class("course-welcome-slider")
    readout = readout_area()

    def _update() -> None:
        readout.value = softmax_gap_readout(slider.value)

    return live_widget([slider, readout], "course-welcome", [slider], _update)
