"""Notebook 04's temperature slider: p(T) from p(1), typed values and quick key presses.

Runs in JupyterLab on 127.0.0.1 driven by headless Chromium; fixtures in tests/browser/conftest.py.
"""

from __future__ import annotations

import math
import re

import pytest

from browser.oracles import entropy_nats, reheat
from browser.readouts import (
    assert_no_nan,
    parse_entropy,
    parse_probabilities,
    temperature_of,
)
from browser.session import (
    open_widget,
    MASKING,
    assert_figures_not_blank,
    figure_png,
    screenshot,
    type_slider_value,
    wait_for_new_figure,
    wait_for_readout,
    wait_kernel_idle,
)
from browser.support import (
    readout_text,
)

pytestmark = pytest.mark.timeout(600)


def read_temperature_state(readout, what: str, predicate=lambda t: True) -> tuple[float, list[float], float, str]:
    """Wait for a readout satisfying ``predicate``; return (T, probabilities, entropy, text)."""
    text = wait_for_readout(
        readout, lambda t: bool(re.search(r"T\s*=\s*\d", t)) and predicate(t), what)
    assert_no_nan(text, "temperature widget")
    probs = list(parse_probabilities(text).values())
    assert len(probs) >= 2, f"expected one 'TOKEN: 0.123' line per token, got:\n{text}"
    assert sum(probs) == pytest.approx(1.0, abs=0.001 * len(probs) + 1e-9), f"probabilities do not sum to 1:\n{text}"
    entropy = parse_entropy(text)
    assert entropy == pytest.approx(entropy_nats(probs), abs=0.01 + 0.005 * len(probs)), (
        f"shown entropy {entropy} disagrees with -sum p ln p of the shown probabilities:\n{text}")
    return temperature_of(text), probs, entropy, text


@pytest.mark.browser
def test_temperature_slider_sharpens_and_flattens(browser):
    page, root, readout = open_widget(browser, MASKING, ".course-temperature")
    slider = root.locator(".course-temperature-slider")
    handle = slider.locator(".noUi-handle")
    assert_figures_not_blank(page, root, "temperature-initial")  # the first chart must not be blank

    if temperature_of(readout_text(readout)) != 1.0:  # another test moved it: type T = 1 back
        type_slider_value(page, slider, "1")
    t1, p1, h1, text1 = read_temperature_state(readout, "T = 1.000 (the default)",
                                               lambda t: temperature_of(t) == 1.0)
    figure_at_1 = figure_png(root)
    top = max(range(len(p1)), key=p1.__getitem__)
    oracle_ok = min(p1) >= 0.01  # p ** (1/T) is only accurate from 3-decimal p when no p is tiny

    # keyboard: five steps down from T = 1 lowers T a little -> sharper
    handle.focus()
    for _ in range(5):  # one step at a time (rapid input is test_rapid_input_...)
        handle.press("ArrowLeft")
        wait_kernel_idle(page)
    t_key, p_key, h_key, _ = read_temperature_state(readout, "a lower T after ArrowLeft x5",
                                                    lambda t: temperature_of(t) < 1.0)
    assert h_key <= h1 and p_key[top] >= p1[top], f"T={t_key}: not sharper than at T=1 ({p_key} vs {p1})"
    if oracle_ok:
        assert p_key == pytest.approx(reheat(p1, t_key), abs=0.01)

    # keyboard: Home = the minimum, T = 0.01 -> (almost) all mass on the top token
    handle.press("Home")
    t_low, p_low, h_low, _ = read_temperature_state(readout, "T = 0.010 after Home",
                                                    lambda t: temperature_of(t) == 0.01)
    assert h_low <= h_key and p_low[top] >= p_key[top] and p_low[top] == max(p_low)
    if oracle_ok:
        assert p_low == pytest.approx(reheat(p1, t_low), abs=0.01)
    if p_low != p1:
        wait_for_new_figure(root, figure_at_1, "moving T from 1 to 0.01")
    screenshot(page, "temperature-low")

    # typed value: T = 5 -> flatter than at T = 1
    type_slider_value(page, slider, "5")
    t_hot, p_hot, h_hot, _ = read_temperature_state(readout, "T = 5.000 after typing 5",
                                                    lambda t: temperature_of(t) == 5.0)
    assert h_hot > h1 and p_hot[top] < p1[top], f"T=5 is not flatter than T=1 ({p_hot} vs {p1})"
    if oracle_ok:
        assert p_hot == pytest.approx(reheat(p1, 5.0), abs=0.01)
    handle.focus()
    handle.press("End")
    _, p_max, h_max, _ = read_temperature_state(readout, "T = 10.000 after End",
                                                lambda t: temperature_of(t) == 10.0)
    assert h_max >= h_hot and h_max <= math.log(len(p_max)) + 0.01
    screenshot(page, "temperature-high")

    # greedy: all mass on the most likely token whatever the temperature
    greedy = root.locator(".course-temperature-greedy")
    toggle = greedy if greedy.evaluate("e => e.tagName") == "BUTTON" else greedy.locator("input, button").first
    toggle.click()
    _, p_greedy, h_greedy, _ = read_temperature_state(
        readout, "a one-hot distribution after the greedy toggle",
        lambda t: max(parse_probabilities(t).values() or [0]) == 1.0)
    assert p_greedy[top] == 1.0 and h_greedy == pytest.approx(0.0, abs=1e-3)
    toggle.click()
    read_temperature_state(readout, "the T = 10 distribution again after greedy off",
                           lambda t: max(parse_probabilities(t).values() or [1]) < 1.0)
    assert_figures_not_blank(page, root, "temperature-after")
    browser.assert_offline()


# --- mask editor (notebook 04) ----------------------------------------------------------------

@pytest.mark.browser
def test_rapid_slider_keys_leave_a_consistent_readout(browser):
    """Five ArrowRight presses in a row: the readout ends at the slider's T and the chart is drawn."""
    page, root, readout = open_widget(browser, MASKING, ".course-temperature")
    slider = root.locator(".course-temperature-slider")
    type_slider_value(page, slider, "1")
    wait_for_readout(readout, lambda t: temperature_of(t) == 1.0, "T = 1.000 after typing 1")
    wait_kernel_idle(page)
    handle = slider.locator(".noUi-handle")
    handle.focus()
    for _ in range(5):
        handle.press("ArrowRight")
    wait_kernel_idle(page, settle_s=1.0)
    shown = float(slider.locator(".widget-readout").inner_text())
    assert shown > 1.0
    text = wait_for_readout(readout, lambda t: abs(temperature_of(t) - shown) < 0.006,
                            f"T = {shown} (the slider's value) after five quick key presses", timeout_s=10)
    read_temperature_state(readout, "a consistent readout")
    assert_figures_not_blank(page, root, "temperature-rapid", timeout_s=5)
    browser.assert_offline()


# --- attention viewers (notebooks 03 and 05) --------------------------------------------------------
