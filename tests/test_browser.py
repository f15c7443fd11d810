"""The widgets, tested for real: JupyterLab on 127.0.0.1 driven by headless Chromium (Playwright).

One JupyterLab server (serving a temporary copy of notebooks/) and one browser are shared by all
tests; each notebook is opened and run once. The widgets are found by the CSS classes promised in
the widget contract (course-readout, course-figure, ...). Screenshots go to test-artifacts/browser/.
Skipped, with the reason, when /usr/bin/chromium (or playwright) is missing.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import math
import re
import shutil
from pathlib import Path
from unittest import mock

import pytest

from browser_support import (
    LabServer,
    RequestLog,
    blank_reason,
    launch_chromium,
    missing_browser_reason,
    open_notebook,
    parse_entropy,
    parse_probabilities,
    readout_text,
    run_all_cells,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
WAIT_MS = 60_000  # a widget callback on a busy 2-core machine can take a few seconds

WELCOME = "00_welcome.ipynb"
TOKENISATION = "01_tokenisation.ipynb"
MASKING = "04_masking_softmax_temperature.ipynb"


# --- shared server, browser and opened notebooks -------------------------------------------------


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    reason = missing_browser_reason()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("browser")
    root = work / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    server = LabServer(root, work / "jupyter").start()
    yield server
    server.stop()


class Session:
    """The shared browser context, the log of every request it made, and notebooks opened so far."""

    def __init__(self, context, lab: LabServer) -> None:
        self.context = context
        self.lab = lab
        self.requests = RequestLog()
        context.on("request", self.requests)
        self.pages: dict[str, object] = {}

    def notebook(self, name: str):
        """The page showing notebook ``name`` after Run All (opened and run once per session)."""
        if not (NOTEBOOKS / name).exists():
            pytest.skip(f"notebooks/{name} does not exist yet, so its widget cannot be tested")
        if name not in self.pages:
            page = self.context.new_page()
            self.pages[name] = page
            open_notebook(page, self.lab, name)
            run_all_cells(page)
        return self.pages[name]

    def assert_offline(self) -> None:
        foreign = self.requests.foreign()
        assert not foreign, f"the page requested something outside 127.0.0.1: {foreign[:10]}"
        assert self.requests.urls, "no request was recorded at all (is the request log attached?)"


@pytest.fixture(scope="session")
def browser(lab, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        context = launch_chromium(playwright, tmp_path_factory.mktemp("chromium") / "profile")
        context.set_default_timeout(WAIT_MS)
        session = Session(context, lab)
        yield session
        for page in session.pages.values():
            try:  # stop the kernels now rather than at server shutdown
                page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
            except Exception:  # noqa: BLE001 - best effort; the server stop kills them anyway
                pass
        context.close()


# --- helpers -------------------------------------------------------------------------------------


def screenshot(page, name: str) -> None:
    """Save a full-window screenshot as a test artifact."""
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def assert_figures_not_blank(page, root, name: str) -> int:
    """Every `.course-figure` under ``root`` and every image in it shows something; returns count."""
    figures = root.locator(".course-figure")
    count = figures.count()
    assert count, f"{name}: no .course-figure element in the widget"
    for i in range(count):
        figure = figures.nth(i)
        figure.scroll_into_view_if_needed()
        box = figure.bounding_box()
        assert box and box["height"] >= 20 and box["width"] >= 20, f"{name}: figure {i} is empty ({box})"
        png = figure.screenshot(path=str(ARTIFACTS / f"{name}-figure{i}.png"))
        reason = blank_reason(png)
        assert reason is None, f"{name}: .course-figure #{i} looks blank: {reason}"
        images = figure.locator("img")
        for j in range(images.count()):
            png = images.nth(j).screenshot(path=str(ARTIFACTS / f"{name}-figure{i}-img{j}.png"))
            reason = blank_reason(png)
            assert reason is None, f"{name}: image {j} of .course-figure #{i} looks blank: {reason}"
    return count


def assert_output_images_not_blank(page, name: str) -> None:
    """Every image in the notebook's outputs (static matplotlib figures) loaded and is not blank."""
    images = page.locator(".jp-OutputArea-output img")
    for i in range(images.count()):
        image = images.nth(i)
        image.scroll_into_view_if_needed()
        loaded = image.evaluate("img => img.complete && img.naturalWidth > 0")
        assert loaded, f"{name}: output image {i} did not load"
        reason = blank_reason(image.screenshot())
        assert reason is None, f"{name}: output image {i} looks blank: {reason}"


def wait_for_readout(readout, predicate, what: str, timeout_s: float = WAIT_MS / 1000) -> str:
    """Poll the readout's text until ``predicate(text)``; AssertionError naming ``what`` if never."""
    import time

    deadline = time.monotonic() + timeout_s
    text = readout_text(readout)
    while time.monotonic() < deadline:
        text = readout_text(readout)
        if predicate(text):
            return text
        time.sleep(0.1)
    raise AssertionError(f"readout never showed {what}; it shows:\n{text}")


def temperature_of(text: str) -> float:
    match = re.search(r"T\s*=\s*(\d+\.\d+)", text)
    assert match, f"no 'T = ...' line in the readout:\n{text}"
    return float(match.group(1))


def assert_no_nan(text: str, where: str) -> None:
    assert not re.search(r"\bnan\b", text, re.IGNORECASE), f"{where}: NaN shown in the readout:\n{text}"


def choose_option(select, pattern: str) -> str:
    """Select the first <option> whose label matches ``pattern`` (case-insensitive); its label."""
    labels = [label.strip() for label in select.locator("option").all_inner_texts()]
    for label in labels:
        if re.search(pattern, label, re.IGNORECASE):
            select.select_option(label=label)
            return label
    raise AssertionError(f"no option matching {pattern!r} in the dropdown; options: {labels}")


# --- the welcome slider (proves widgets render at all) -------------------------------------------


def two_logit_softmax(gap: float) -> tuple[float, float]:
    """Hand-derived oracle: softmax([gap, 0]) = (1 / (1 + e^-gap), 1 / (1 + e^gap))."""
    return 1 / (1 + math.exp(-gap)), 1 / (1 + math.exp(gap))


def welcome_probs(text: str) -> tuple[float, float, float]:
    match = re.search(r"logits \[(-?\d+\.\d+), .*probabilities \[(\d\.\d+), (\d\.\d+)\]", text)
    assert match, f"unexpected welcome readout: {text}"
    return tuple(float(g) for g in match.groups())


def test_welcome_slider_renders_and_reacts(browser):
    page = browser.notebook(WELCOME)
    root = page.locator(".course-welcome").first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout")
    gap, p0, p1 = welcome_probs(readout_text(readout))
    assert (p0, p1) == pytest.approx(two_logit_softmax(gap), abs=1e-3)

    handle = root.locator(".course-welcome-slider .noUi-handle")
    handle.focus()
    handle.press("End")  # keyboard: jump to the maximum gap (10)
    text = wait_for_readout(readout, lambda t: welcome_probs(t)[0] == 10.0, "gap 10.000 after End")
    gap, p0, p1 = welcome_probs(text)
    assert (p0, p1) == pytest.approx(two_logit_softmax(gap), abs=1e-3)

    typed = root.locator(".course-welcome-slider .widget-readout")
    typed.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("-1.5")
    page.keyboard.press("Enter")
    text = wait_for_readout(readout, lambda t: welcome_probs(t)[0] == -1.5, "gap -1.500 after typing")
    assert welcome_probs(text)[1:] == pytest.approx(two_logit_softmax(-1.5), abs=1e-3)
    screenshot(page, "welcome")
    assert_output_images_not_blank(page, "welcome")
    browser.assert_offline()
