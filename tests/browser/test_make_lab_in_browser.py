"""`make lab` seen by a student in a real browser: the server started by `make lab`'s own commands (in a
scratch copy of the course, tests/test_make_lab.py) sends its bare address to the student's copy of
00_welcome, which is the notebook in front and whose title shows; run top to bottom, its exercise check
says "not attempted" and no cell raises. The server runs with the exact recipe plus a free port, a known
token, no browser of its own and ``expose_app_in_browser`` (so the test can read JupyterLab's state);
nothing else is configured."""

from __future__ import annotations

import pytest

from browser.support import run_all_cells, wait_notebook_shown
from test_make_lab import served_student_course

pytestmark = pytest.mark.timeout(600)


@pytest.mark.browser
@pytest.mark.slow
def test_make_lab_opens_the_students_welcome_and_its_check_says_not_attempted(browser, tmp_path):
    with served_student_course(tmp_path, extra=["--LabApp.expose_app_in_browser=True"]) as (port, token, _):
        page = browser.context.new_page()
        try:
            page.goto(f"http://127.0.0.1:{port}/?token={token}", wait_until="domcontentloaded")
            wait_notebook_shown(page)
            # the notebook in front is the student's 00_welcome (JupyterLab may rewrite the address bar to the folder)
            shown = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
            assert shown == "student/00_welcome.ipynb", shown
            title = page.locator(".jp-Notebook .jp-MarkdownOutput h1").first
            assert title.is_visible() and "Welcome to Inside the Transformer" in title.inner_text()
            verdicts = page.locator(".jp-OutputArea-output", has_text="not attempted yet")
            assert verdicts.count() == 0  # a fresh copy: no outputs stored
            run_all_cells(page)  # raises if any cell shows a Python error
            verdicts.first.scroll_into_view_if_needed()
            assert verdicts.first.is_visible()
        finally:
            page.close()
