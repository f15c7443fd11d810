"""Every stored output image is drawn; notebook 01's tokenizer widget against tiktoken.

Runs in JupyterLab on 127.0.0.1 driven by headless Chromium; fixtures in tests/browser/conftest.py.
"""

from __future__ import annotations

import re

import pytest

from browser.oracles import tiktoken_encoding
from browser.session import (
    NOTEBOOK_OF_TEST,
    TOKENISATION,
    assert_output_images_not_blank,
    choose_option,
    screenshot,
    wait_for_readout,
)

pytestmark = pytest.mark.timeout(600)

@pytest.mark.browser
@pytest.mark.parametrize("notebook", sorted(set(NOTEBOOK_OF_TEST.values())))
def test_output_images_are_drawn(browser, notebook):
    """After Run All in JupyterLab, no output image (static matplotlib figure) is blank.

    (Figures inside widgets are checked by each widget's test, after it has used the widget.)"""
    page = browser.notebook(notebook)
    assert_output_images_not_blank(page, notebook)
    browser.assert_offline()


# --- tokenizer widget (notebook 01) ---------------------------------------------------------------

SAMPLE = "Hello world, tokenizers split 12345 cats."
VISIBLE_SPACE = str.maketrans({"·": " ", "␣": " ", "Ġ": " ", "▁": " ", "↵": "\n"})


@pytest.mark.browser
@pytest.mark.parametrize(("choice", "encoding"), [
    (r"gpt-?2", "gpt2"), (r"cl100k", "cl100k_base"), (r"o200k", "o200k_base")])
def test_tokenizer_widget_shows_tiktoken_pieces_and_ids(browser, choice, encoding, tmp_path):
    page = browser.notebook(TOKENISATION)
    oracle = tiktoken_encoding(encoding, tmp_path / "tiktoken-cache")
    expected = oracle.encode(SAMPLE)
    root = page.locator(".course-tokenizer").first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout").first
    text_box = root.locator(".course-tokenizer-text").locator("input, textarea").first
    label = choose_option(root.locator(".course-tokenizer-choice select"), choice)
    text_box.fill(SAMPLE)
    text_box.evaluate("e => e.blur()")  # commits the value when continuous_update is off

    def shown_ids(text: str) -> list[int] | None:
        match = re.search(r"ids:\s*\[([\d,\s]*)\]", text)
        return [int(x) for x in match.group(1).split(",") if x.strip()] if match else None

    text = wait_for_readout(readout, lambda t: shown_ids(t) == expected,
                            f"the {encoding} ids {expected} for {SAMPLE!r} ({label})")
    assert re.search(rf"tokens:\s*{len(expected)}\b", text), f"no 'tokens: {len(expected)}' line:\n{text}"
    tokens = readout.locator(".course-token")
    titles = tokens.evaluate_all("els => els.map(e => e.getAttribute('title'))")
    assert titles == [f"id {i}" for i in expected], f"token spans' titles {titles} != ids {expected}"
    pieces = [p.translate(VISIBLE_SPACE) for p in tokens.all_text_contents()]
    assert pieces == [oracle.decode([i]) for i in expected]
    screenshot(page, f"tokenizer-{encoding}")
    browser.assert_offline()


# --- the checks themselves can fail (fast, no browser) -------------------------------------------
