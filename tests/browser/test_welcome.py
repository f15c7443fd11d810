"""The welcome notebook's slider: widgets render at all, and react.

Runs in JupyterLab on 127.0.0.1 driven by headless Chromium; fixtures in tests/browser/conftest.py.
"""

from __future__ import annotations


import pytest

from browser.oracles import two_logit_softmax
from browser.readouts import (
    welcome_probs,
)
from browser.session import (
    WELCOME,
    check_welcome_slider,
    screenshot,
    type_slider_value,
    wait_for_readout,
)

pytestmark = pytest.mark.timeout(600)


# --- the welcome slider (proves widgets render at all) -------------------------------------------


@pytest.mark.browser
def test_welcome_slider_renders_and_reacts(browser):
    page = browser.notebook(WELCOME)
    root, readout = check_welcome_slider(page)
    type_slider_value(page, root.locator(".course-welcome-slider"), "-1.5")
    text = wait_for_readout(readout, lambda t: welcome_probs(t)[0] == -1.5, "gap -1.500 after typing")
    assert welcome_probs(text)[1:] == pytest.approx(two_logit_softmax(-1.5), abs=1e-3)
    screenshot(page, "welcome")
    browser.assert_offline()


# --- temperature widget (notebook 04) -------------------------------------------------------------
