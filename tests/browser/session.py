"""The shared browser-test harness: constants, the notebooks each test drives, the browser session
(one JupyterLab tab, notebooks opened and run once) and helpers that read and check widgets.

The ``lab`` and ``browser`` fixtures that build them live in ``tests/browser/conftest.py``, so
every ``tests/browser/test_*.py`` file shares one JupyterLab server and one Chromium. A test file that
drives a new notebook registers it in ``NOTEBOOK_OF_TEST`` (or calls ``browser.notebook(name)``),
so the session opens all needed notebooks at once and their kernels run in parallel.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from browser.support import (
    LabServer,
    RequestLog,
    activate,
    blank_reason,
    images_differ,
    open_and_run_all,
    output_image_stats,
    readout_text,
    settle_images,
    wait_run_all,
)

ROOT = Path(__file__).resolve().parents[2]
# COURSE_BROWSER_NOTEBOOKS: test another folder of notebooks (used to check the harness itself).
NOTEBOOKS = Path(os.environ.get("COURSE_BROWSER_NOTEBOOKS", ROOT / "notebooks"))
ARTIFACTS = ROOT / "test-artifacts" / "browser"
WAIT_MS = 60_000  # a widget callback on a busy 2-core machine can take a few seconds

WELCOME = "00_welcome.ipynb"
TOKENISATION = "01_tokenisation.ipynb"
MASKING = "04_masking_softmax_temperature.ipynb"
ATTENTION = "03_attention.ipynb"
MULTIHEAD = "05_multihead_attention.ipynb"


# --- shared server, browser and opened notebooks -------------------------------------------------


# Which notebook each browser test drives: the session opens and starts all the notebooks the
# selected tests need at once, so their kernels run in parallel instead of one after another.
NOTEBOOK_OF_TEST = {
    "test_welcome_slider_renders_and_reacts": WELCOME,
    "test_temperature_slider_sharpens_and_flattens": MASKING,
    "test_mask_editor_toggles_presets_and_never_shows_nan": MASKING,
    "test_rapid_clicks_leave_a_drawn_figure": MASKING,
    "test_rapid_slider_keys_leave_a_consistent_readout": MASKING,
    "test_dk_viewer_scaling_matters_only_for_large_dk": ATTENTION,
    "test_head_viewer_switches_heads_and_queries": MULTIHEAD,
    "test_head_viewer_quick_inputs_leave_a_drawn_figure": MULTIHEAD,
    "test_tokenizer_widget_shows_tiktoken_pieces_and_ids": TOKENISATION,
    "test_figures_read_in_the_dark_and_the_light_theme": ATTENTION,
}


class Session:
    """The shared browser context, the log of every request it made, and the notebooks opened."""

    def __init__(self, context, lab: LabServer) -> None:
        self.context = context
        self.lab = lab
        self.requests = RequestLog()
        context.on("request", self.requests)
        self.page = None
        self.panels: dict[str, str] = {}
        self.finished: set[str] = set()
        self.t0 = time.monotonic()
        self.timings: list[str] = []

    def start(self, *names: str) -> None:
        """Open the notebooks in the one JupyterLab tab and start Run All in each (no waiting).

        JupyterLab loads once; the kernels start and run in parallel.
        """
        names = [n for n in dict.fromkeys(names) if n not in self.panels and (NOTEBOOKS / n).exists()]
        if not names:
            return
        if self.page is None:
            self.page = self.context.new_page()
        self.panels.update(open_and_run_all(self.page, self.lab, names))
        self.timings.append(f"{time.monotonic() - self.t0:7.1f} s  opened, Run All started: {', '.join(names)}")

    def notebook(self, name: str):
        """The JupyterLab page showing notebook ``name`` after its Run All finished (run once)."""
        if not (NOTEBOOKS / name).exists():
            pytest.skip(f"notebooks/{name} does not exist yet, so its widget cannot be tested")
        self.start(name)
        activate(self.page, self.panels[name])
        if name not in self.finished:
            wait_run_all(self.page)
            self.finished.add(name)
            self.timings.append(f"{time.monotonic() - self.t0:7.1f} s  Run All finished: {name}")
        return self.page

    def assert_offline(self) -> None:
        foreign = self.requests.foreign()
        assert not foreign, f"the page requested something outside 127.0.0.1: {foreign[:10]}"
        assert self.requests.urls, "no request was recorded at all (is the request log attached?)"


# --- helpers -------------------------------------------------------------------------------------


def open_widget(browser, notebook: str, selector: str, has: str | None = None):
    """(page, root, readout): ``notebook`` open in JupyterLab, the first widget matching ``selector`` (and
    holding ``has``) scrolled into view, and that widget's readout line."""
    page = browser.notebook(notebook)
    root = page.locator(selector)
    root = (root.filter(has=page.locator(has)) if has else root).first
    root.scroll_into_view_if_needed()
    return page, root, root.locator(".course-readout").first


def screenshot(page, name: str) -> None:
    """Save a full-window screenshot as a test artifact (after the kernel's redraw finished)."""
    wait_kernel_idle(page)
    settle_images(page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def assert_figures_not_blank(page, root, name: str, timeout_s: float = 15.0) -> int:
    """Every `.course-figure` under ``root`` and every image in it shows something; returns count.

    Waits for the kernel to finish the callback, then allows ``timeout_s`` for a redraw in
    progress (an image being swapped is blank for a moment); a figure still blank after that fails.
    """
    wait_kernel_idle(page)
    figures = root.locator(".course-figure")
    count = figures.count()
    assert count, f"{name}: no .course-figure element in the widget"
    for i in range(count):
        figure = figures.nth(i)
        figure.scroll_into_view_if_needed()
        deadline = time.monotonic() + timeout_s
        while True:
            problem = _figure_problem(figure, f"{name}-figure{i}")
            if problem is None:
                break
            if time.monotonic() > deadline:
                images = figure.evaluate(
                    "el => [...el.querySelectorAll('img')].map(i => ({natural: [i.naturalWidth, i.naturalHeight],"
                    " shown: [i.width, i.height], complete: i.complete, bytes: i.src.length}))")
                raise AssertionError(f"{name}: .course-figure #{i} {problem}; its images: {images}")
            time.sleep(0.25)
    return count


def _figure_problem(figure, stem: str) -> str | None:
    settle_images(figure)
    box = figure.bounding_box()
    if not box or box["height"] < 20 or box["width"] < 20:
        return f"is empty (bounding box {box})"
    reason = blank_reason(figure.screenshot(path=str(ARTIFACTS / f"{stem}.png")))
    if reason:
        return f"looks blank: {reason}"
    images = figure.locator("img")
    for j in range(images.count()):
        reason = blank_reason(images.nth(j).screenshot(path=str(ARTIFACTS / f"{stem}-img{j}.png")))
        if reason:
            return f"image {j} looks blank: {reason}"
    return None


def wait_kernel_idle(page, settle_s: float = 0.3) -> None:
    """Wait until the notebook's kernel is idle (a widget callback has finished)."""
    time.sleep(settle_s)  # let a just-sent comm message turn the kernel busy first
    page.wait_for_function(
        """() => {
          const w = window.jupyterapp.shell.currentWidget;
          const k = w && w.sessionContext.session && w.sessionContext.session.kernel;
          return k && k.status === 'idle';
        }""", timeout=WAIT_MS, polling=100)


def assert_output_images_not_blank(page, name: str, min_std: float = 0.02, min_ink: float = 0.02) -> int:
    """Every image in the notebook's outputs (matplotlib figures) loaded and is not blank."""
    panel = f"[id='{page.evaluate('() => window.jupyterapp.shell.currentWidget.id')}']"
    settle_images(page.locator(panel))
    stats = output_image_stats(page, f"{panel} .jp-OutputArea-output img")
    bad = [s for s in stats if s["w"] == 0 or s["std"] < min_std or s["ink"] < min_ink]
    assert not bad, f"{name}: blank or unloaded output images (of {len(stats)}): {bad}"
    return len(stats)


def figure_png(root) -> bytes:
    """A screenshot of the widget's first `.course-figure` (after the kernel went idle)."""
    wait_kernel_idle(root.page)
    figure = root.locator(".course-figure").first
    figure.scroll_into_view_if_needed()
    settle_images(figure)
    return figure.screenshot()


def wait_for_new_figure(root, before: bytes, what: str, timeout_s: float = 20.0) -> bytes:
    """Poll until the figure differs from ``before`` (a stale chart is the other plt.show() pitfall)."""
    deadline = time.monotonic() + timeout_s
    while True:
        after = figure_png(root)
        if images_differ(before, after):
            return after
        if time.monotonic() > deadline:
            raise AssertionError(f"the figure did not change after {what} (stale chart?)")
        time.sleep(0.2)


def wait_for_readout(readout, predicate, what: str, timeout_s: float = WAIT_MS / 1000) -> str:
    """Poll the readout's text until ``predicate(text)``; AssertionError naming ``what`` if never."""
    deadline = time.monotonic() + timeout_s
    text = readout_text(readout)
    while time.monotonic() < deadline:
        text = readout_text(readout)
        if predicate(text):
            return text
        time.sleep(0.1)
    raise AssertionError(f"readout never showed {what}; it shows:\n{text}")


def type_slider_value(page, slider, value: str) -> None:
    """Type ``value`` into an ipywidgets slider's editable readout and press Enter."""
    typed = slider.locator(".widget-readout")
    typed.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(value)
    page.keyboard.press("Enter")


def choose_option(select, pattern: str) -> str:
    """Select the first <option> whose label matches ``pattern`` (case-insensitive); its label."""
    labels = select.locator("option").all_text_contents()
    for label in labels:  # ipywidgets shows spaces in option labels as no-break spaces
        if re.search(pattern, label.replace("\xa0", " ").strip(), re.IGNORECASE):
            select.select_option(label=label)
            return label
    raise AssertionError(f"no option matching {pattern!r} in the dropdown; options: {labels}")


def check_welcome_slider(page):
    """00's slider rendered with the right numbers, and a key press (End: gap 10) reaches the kernel and back.

    Returns the widget's root and readout for further steps."""
    from browser.oracles import two_logit_softmax
    from browser.readouts import welcome_probs

    root = page.locator(".course-welcome").first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout")
    gap, p0, p1 = welcome_probs(readout_text(readout))
    assert (p0, p1) == pytest.approx(two_logit_softmax(gap), abs=1e-3)
    handle = root.locator(".course-welcome-slider .noUi-handle")
    handle.focus()
    handle.press("End")  # keyboard: jump to the maximum gap (10)
    text = wait_for_readout(readout, lambda t: welcome_probs(t)[0] == 10.0, "gap 10.000 after End")
    assert welcome_probs(text)[1:] == pytest.approx(two_logit_softmax(10.0), abs=1e-3)
    return root, readout
