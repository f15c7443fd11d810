"""Notebook 08's parameter counter in a real browser (JupyterLab + headless Chromium).

Uses the shared server and browser fixtures of tests/conftest.py. The oracle is the library:
``count_parameters`` / ``active_parameters`` of the ``ModelConfig`` the test has set with the
sliders (and, through the tests of ``course_utils.counting.parameters``, the real modules behind it). The
sliders are log-scaled: each handle is drawn where its starting value sits on a log axis.
"""

from __future__ import annotations

import re

import pytest

from course_utils.counting import parameters as counting
from course_utils.counting.parameters import ModelConfig
from course_utils.viz.parameter_counting import SLIDERS, START, STYLES
from browser.session import (
    open_widget,
    assert_figures_not_blank,
    assert_output_images_not_blank,
    figure_png,
    screenshot,
    wait_for_new_figure,
    wait_for_readout,
)

pytestmark = pytest.mark.timeout(600)

NOTEBOOK = "08_parameter_counting.ipynb"


def _shown(text: str, label: str) -> int:
    match = re.search(rf"{label}: ([\d,]+)", text)
    assert match, f"no '{label}: N' line in the readout:\n{text}"
    return int(match.group(1).replace(",", ""))


def _shown_total(text: str) -> int | None:
    return _shown(text, "total parameters") if "total parameters" in text else None


def _oracle(**sizes) -> ModelConfig:
    return ModelConfig(**sizes, d_mlp=4 * sizes["d_model"], **STYLES[next(iter(STYLES))][0])


def _slider(root, field: str):
    return root.locator(f".course-counter-{field.replace('_', '-')}")


def _handle_place(root, field: str) -> float:
    """Where the slider's handle is drawn along its track: 0 at the far left, 1 at the far right."""
    slider = _slider(root, field)
    track, handle = slider.locator(".noUi-base").bounding_box(), slider.locator(".noUi-handle").bounding_box()
    return (handle["x"] + handle["width"] / 2 - track["x"]) / track["width"]


def _step_to(root, sizes: dict, field: str, value: int) -> None:
    """Move a slider from ``sizes[field]`` to ``value`` with the arrow keys, one stop a press, as a reader can."""
    stops = SLIDERS[field][0]
    moves = stops.index(value) - stops.index(sizes[field])
    handle = _slider(root, field).locator(".noUi-handle")
    handle.focus()
    for _ in range(abs(moves)):
        handle.press("ArrowRight" if moves > 0 else "ArrowLeft")
    sizes[field] = value


@pytest.mark.browser
def test_counter_sliders_update_counts_and_figure(browser):
    page, root, readout = open_widget(browser, NOTEBOOK, ".course-counter")
    assert_figures_not_blank(page, root, "counter-initial")
    text = wait_for_readout(readout, lambda t: "total parameters:" in t, "the first readout")
    assert _shown(text, "total parameters") == counting.count_parameters(_oracle(**START))["total"] == 124_439_808
    before = figure_png(root)
    for field, (stops, start) in SLIDERS.items():  # log-scaled: e.g. d_model = 768 of 64..16,384 at 0.44, not 0.04
        if field != "experts_per_token":
            expected = stops.index(start) / (len(stops) - 1)
            assert _handle_place(root, field) == pytest.approx(expected, abs=0.05), field
    assert _handle_place(root, "d_model") > 0.3

    sizes = dict(START)
    for field, value in (("n_layers", 24), ("n_kv_heads", 4), ("n_heads", 16), ("d_model", 1024)):  # valid at each step
        _step_to(root, sizes, field, value)
        expected = counting.count_parameters(_oracle(**sizes))["total"]
        text = wait_for_readout(readout, lambda t: _shown_total(t) == expected,
                                f"total {expected:,} after {field} = {value}")
    before = wait_for_new_figure(root, before, "four slider changes")

    for field, value in (("n_experts", 8), ("experts_per_token", 2)):
        _step_to(root, sizes, field, value)
    cfg = _oracle(**sizes)
    text = wait_for_readout(readout, lambda t: "active parameters" in t
                            and _shown(t, "active parameters") == counting.active_parameters(cfg)["total"],
                            "the active count of 8 experts, top-2")
    assert _shown(text, "total parameters") == counting.count_parameters(cfg)["total"]
    assert _shown(text, "total parameters") > _shown(text, "active parameters")

    _step_to(root, sizes, "n_heads", 24)  # 1024 is not divisible by 24
    text = wait_for_readout(readout, lambda t: t.startswith("WARNING"), "a WARNING for d_model % n_heads")
    assert "n_heads" in text and "nan" not in text.lower()
    assert_figures_not_blank(page, root, "counter-warning")
    screenshot(page, "parameter-counter")
    assert_output_images_not_blank(page, "notebook 08")
    browser.assert_offline()
