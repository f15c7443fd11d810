"""Notebook 04's mask editor: presets, toggles, never a NaN, quick clicks.

Runs in JupyterLab on 127.0.0.1 driven by headless Chromium; fixtures in tests/browser/conftest.py.
"""

from __future__ import annotations

import re
import time

import pytest

from browser.readouts import (
    assert_no_nan,
    pattern_rows,
)
from browser.session import (
    open_widget,
    MASKING,
    assert_figures_not_blank,
    choose_option,
    figure_png,
    screenshot,
    wait_for_new_figure,
    wait_for_readout,
    wait_kernel_idle,
)
from browser.support import (
    readout_text,
)

pytestmark = pytest.mark.timeout(600)


def mask_cell_labels(cells) -> list[tuple[int, int]]:
    """(query, key) of each .course-mask-cell, read from its text or tooltip 'q{i} k{j}'."""
    labels = cells.evaluate_all(
        "els => els.map(e => (e.getAttribute('title') || '') + ' | ' + (e.textContent || ''))")
    out = []
    for label in labels:
        match = re.search(r"q\s*(\d+)\D+?k\s*(\d+)", label)
        assert match, f"mask cell without a 'q{{i}} k{{j}}' description or tooltip: {label!r}"
        out.append((int(match.group(1)), int(match.group(2))))
    return out


def check_pattern(text: str, n_queries: int, n_keys: int, allowed: dict) -> list[list[float]]:
    """Rows are probabilities over allowed keys only; a fully masked row is all zero with a WARNING."""
    assert_no_nan(text, "mask editor")
    rows = pattern_rows(text, n_keys)
    assert len(rows) == n_queries, f"expected {n_queries} rows of {n_keys} numbers in the readout:\n{text}"
    for i, row in enumerate(rows):
        if any(allowed[i, j] for j in range(n_keys)):
            assert sum(row) == pytest.approx(1.0, abs=0.001 * n_keys + 1e-9), f"row {i} does not sum to 1:\n{text}"
        else:
            assert sum(row) == 0.0, f"fully masked row {i} should be all zeros:\n{text}"
            assert re.search(rf"WARNING: fully masked row.*(?<!\d){i}(?!\d)", text), f"no WARNING naming row {i}:\n{text}"
        for j, value in enumerate(row):
            if not allowed[i, j]:
                assert value == 0.0, f"masked entry (q{i}, k{j}) has weight {value}:\n{text}"
    return rows


@pytest.mark.browser
def test_mask_editor_toggles_presets_and_never_shows_nan(browser):
    page, root, readout = open_widget(browser, MASKING, ".course-mask-editor")
    cells = root.locator(".course-mask-cell")
    preset = root.locator(".course-mask-preset select")
    assert_figures_not_blank(page, root, "mask-initial")
    labels = mask_cell_labels(cells)
    n_queries = max(i for i, _ in labels) + 1
    n_keys = max(j for _, j in labels) + 1
    assert n_queries >= 2 and n_keys >= 2 and len(labels) == n_queries * n_keys
    clipped = root.locator(".widget-label").evaluate_all(
        "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"
    )
    assert not clipped, f"the grid's labels are cut off: {clipped}"

    def state() -> dict:
        active = cells.evaluate_all("els => els.map(e => e.classList.contains('mod-active'))")
        return dict(zip(labels, active))

    def change(action, what: str) -> str:
        before = readout_text(readout)
        action()
        text = wait_for_readout(readout, lambda t: t != before, what)
        wait_kernel_idle(page)  # a user-paced click: the redraw finishes before the next one
        return readout_text(readout)

    if not re.search("causal", preset.evaluate("s => s.options[s.selectedIndex].text"), re.IGNORECASE):
        change(lambda: choose_option(preset, r"^\s*all"), "a new pattern after preset 'all'")
        change(lambda: choose_option(preset, "causal"), "a new pattern after preset 'causal'")
    allowed = state()
    assert allowed == {(i, j): j <= i for i, j in labels}, "the causal preset does not show a causal mask"
    check_pattern(readout_text(readout), n_queries, n_keys, allowed)
    causal_figure = figure_png(root)

    # let query 0 also see key 1: its row changes and still sums to 1
    cell_01 = cells.nth(labels.index((0, 1)))
    text = change(cell_01.click, "a new pattern after toggling q0 k1 on")
    allowed = state()
    assert allowed[0, 1], "the q0 k1 button did not switch on"
    rows = check_pattern(text, n_queries, n_keys, allowed)
    assert rows[0][1] > 0.0

    # mask everything for query 0: zeros and a warning, never NaN
    cell_00 = cells.nth(labels.index((0, 0)))
    change(cell_00.click, "a new pattern after toggling q0 k0 off")
    text = change(cell_01.click, "a new pattern after toggling q0 k1 off")
    allowed = state()
    assert not any(allowed[0, j] for j in range(n_keys))
    check_pattern(text, n_queries, n_keys, allowed)
    wait_for_new_figure(root, causal_figure, "masking row 0 completely")
    screenshot(page, "mask-fully-masked-row")
    assert_figures_not_blank(page, root, "mask-fully-masked-row")

    # a different preset changes the pattern again
    text = change(lambda: choose_option(preset, "sliding"), "a new pattern after preset 'sliding window'")
    allowed = state()
    assert allowed != {(i, j): j <= i for i, j in labels}, "sliding window looks just like causal"
    check_pattern(text, n_queries, n_keys, allowed)
    assert_figures_not_blank(page, root, "mask-sliding")
    browser.assert_offline()


# --- rapid input: events arriving while a redraw is running ---------------------------------------


@pytest.mark.browser
def test_rapid_clicks_leave_a_drawn_figure(browser):
    """Two mask cells clicked ~50 ms apart (a quick user): the final figure is drawn, not blank,
    and the readout matches the final toggles. (ipykernel 7 may run the two callbacks on two
    threads at once; unserialised pyplot drawing then sends a blank PNG.)"""
    page, root, readout = open_widget(browser, MASKING, ".course-mask-editor")
    cells = root.locator(".course-mask-cell")
    preset = root.locator(".course-mask-preset select")
    labels = mask_cell_labels(cells)
    n_queries, n_keys = max(i for i, _ in labels) + 1, max(j for _, j in labels) + 1
    choose_option(preset, "^all")
    wait_kernel_idle(page)
    choose_option(preset, "causal")
    wait_for_readout(readout, lambda t: len(pattern_rows(t, n_keys)) == n_queries and pattern_rows(t, n_keys)[0][1] == 0.0,
                     "the causal pattern")
    wait_kernel_idle(page)
    for i, j in [(0, 1), (1, 2), (0, 0)]:
        cells.nth(labels.index((i, j))).click()
        time.sleep(0.05)
    wait_kernel_idle(page, settle_s=1.0)
    active = cells.evaluate_all("els => els.map(e => e.classList.contains('mod-active'))")
    allowed = dict(zip(labels, active))
    expected = {(i, j): (j <= i) != ((i, j) in [(0, 1), (1, 2), (0, 0)]) for i, j in labels}
    assert allowed == expected, "the buttons do not show the three toggles"
    text = wait_for_readout(readout, lambda t: pattern_rows(t, n_keys)[0][1] > 0.0 and pattern_rows(t, n_keys)[0][0] == 0.0,
                            "the final pattern (q0 sees only k1) after three quick clicks", timeout_s=10)
    check_pattern(text, n_queries, n_keys, allowed)
    assert_figures_not_blank(page, root, "mask-rapid", timeout_s=5)
    browser.assert_offline()
