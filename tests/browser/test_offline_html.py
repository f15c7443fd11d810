"""A notebook exported to HTML reads offline with its mathematics typeset (issue 42: `jupyter nbconvert
--to html` loads MathJax from a CDN, so offline the page showed raw LaTeX). The README's recipe,
``python -m course_utils.viz.offline_html``, is opened from disk in Debian's Chromium with every request
outside file:// refused: each formula is MathJax output, none failed, no raw ``$...$`` is left. The
plain nbconvert export, opened the same way, is the planted bad case: its formulas stay raw."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from nbconvert import HTMLExporter

from browser.support import CHROMIUM, CHROMIUM_ARGS, missing_browser_reason
from course_utils.viz.offline_html import export_html, local_mathjax_url, main
from notebook_tools import NOTEBOOK_DIR

NOTEBOOK = NOTEBOOK_DIR / "03_attention.ipynb"  # 97 formulas, inline and displayed, primes and sums
RAW_MATH = re.compile(r"\$[^$\n]{1,200}\$")
TYPESET_STATE_JS = """() => {
  const scripts = [...document.querySelectorAll("script[type^='math/tex']")];
  const done = window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0
    && scripts.every(s => s.MathJax && s.MathJax.state === MathJax.ElementJax.STATE.PROCESSED);
  return {scripts: scripts.length, done: !!done, drawn: document.querySelectorAll(".MathJax").length,
          failed: [...document.querySelectorAll(".MathJax .merror, .MathJax_Error")].map(e => e.textContent)};
}"""


def _open_offline(browser, path, wait_for_mathjax: bool) -> tuple[dict, str, list[str]]:
    """Open ``path`` with every request that is not file:, data: or about: refused; return MathJax's
    state, the page's text and the refused URLs."""
    page = browser.new_page()
    refused = []

    def route(route):
        if route.request.url.startswith(("file:", "data:", "about:")):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", route)
    try:
        page.goto(path.as_uri(), wait_until="load")
        if wait_for_mathjax:
            page.wait_for_function(f"() => ({TYPESET_STATE_JS})().done", timeout=120_000)
        return page.evaluate(TYPESET_STATE_JS), page.inner_text("body"), refused
    finally:
        page.close()


def test_the_local_mathjax_is_on_disk_and_bad_paths_are_refused(tmp_path):
    url = local_mathjax_url()
    assert url.startswith("file:///") and url.split("?")[0].endswith("/MathJax.js")
    with pytest.raises(ValueError, match="notebook must be an existing .ipynb"):
        export_html(tmp_path / "missing.ipynb")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="notebook must be an existing .ipynb"):
        export_html(tmp_path / "notes.txt")


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_exported_html_typesets_its_maths_with_the_network_refused(tmp_path):
    reason = missing_browser_reason()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    main([str(NOTEBOOK), "--out", str(tmp_path)])  # the README's command
    offline = tmp_path / NOTEBOOK.with_suffix(".html").name
    plain = tmp_path / "plain.html"
    plain.write_text(HTMLExporter(template_name="lab").from_filename(str(NOTEBOOK))[0], encoding="utf-8")
    def open_both():
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            try:
                return (_open_offline(browser, offline, wait_for_mathjax=True),
                        _open_offline(browser, plain, wait_for_mathjax=False))
            finally:
                browser.close()

    # a thread of its own: the other browser tests' session keeps Playwright's event loop in this thread
    with ThreadPoolExecutor(1) as pool:
        (state, text, refused), (plain_state, plain_text, plain_refused) = pool.submit(open_both).result()

    assert state["scripts"] > 50 and state["drawn"] == state["scripts"], state
    assert state["failed"] == [], f"formulas MathJax could not draw: {state['failed'][:5]}"
    assert not RAW_MATH.search(text), f"raw LaTeX left on the page: {RAW_MATH.findall(text)[:5]}"
    assert not any("mathjax" in url.lower() for url in refused), refused  # MathJax came from the disk
    # the planted bad case: nbconvert's own page asks a CDN for MathJax, so offline its formulas stay raw
    assert any("mathjax" in url.lower() for url in plain_refused) and plain_state["drawn"] == 0
    assert len(RAW_MATH.findall(plain_text)) > 20
