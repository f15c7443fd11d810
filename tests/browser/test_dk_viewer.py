"""Notebook 03's d_k viewer: scaling matters only for large d_k.

Runs in JupyterLab on 127.0.0.1 driven by headless Chromium; fixtures in tests/browser/conftest.py.
"""

from __future__ import annotations


import pytest

from browser.readouts import (
    assert_no_nan,
    dk_of,
    dk_stats,
)
from browser.session import (
    open_widget,
    ATTENTION,
    assert_figures_not_blank,
    figure_png,
    screenshot,
    type_slider_value,
    wait_for_new_figure,
    wait_for_readout,
)

pytestmark = pytest.mark.timeout(600)

@pytest.mark.browser
def test_dk_viewer_scaling_matters_only_for_large_dk(browser):
    page, root, readout = open_widget(browser, ATTENTION, ".course-attention-viewer", has=".course-dk")
    slider = root.locator(".course-dk")
    assert_figures_not_blank(page, root, "dk-initial")
    before = figure_png(root)

    # d_k = 1: dividing by sqrt(1) changes nothing, so both patterns have identical statistics
    type_slider_value(page, slider, "1")
    text = wait_for_readout(readout, lambda t: dk_of(t) == 1, "d_k = 1 after typing 1")
    assert_no_nan(text, "d_k viewer")
    stats = dk_stats(text)
    assert stats["scaled"] == stats["unscaled"], f"at d_k = 1 scaling is a no-op:\n{text}"
    wait_for_new_figure(root, before, "typing d_k = 1")

    # keyboard End -> the largest d_k: unscaled scores saturate (peakier, lower entropy)
    handle = slider.locator(".noUi-handle")
    handle.focus()
    handle.press("End")
    text = wait_for_readout(readout, lambda t: (dk_of(t) or 0) > 100, "a large d_k after End")
    stats = dk_stats(text)
    assert stats["unscaled"][0] > stats["scaled"][0] and stats["unscaled"][1] < stats["scaled"][1], (
        f"unscaled attention should saturate at large d_k:\n{text}")
    screenshot(page, "dk-viewer")
    assert_figures_not_blank(page, root, "dk-large")
    browser.assert_offline()
