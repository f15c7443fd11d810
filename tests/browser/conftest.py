"""Fixtures shared by every browser test file (``tests/browser/test_*.py``): one JupyterLab server
and one headless Chromium for all of them, started only when a browser test runs."""

from __future__ import annotations

import shutil

import pytest

from browser.session import ARTIFACTS, NOTEBOOK_OF_TEST, NOTEBOOKS, WAIT_MS, Session
from browser.support import LabServer, launch_chromium, missing_browser_reason


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    reason = missing_browser_reason()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("browser")
    root = work / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "student"))
    server = LabServer(root, work / "jupyter").start()
    yield server
    server.stop()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "jupyterlab.log").write_text(server.log_tail(200_000))


@pytest.fixture(scope="session")
def browser(lab, tmp_path_factory, request):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    needed = []
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        name = params.get("notebook") or NOTEBOOK_OF_TEST.get(getattr(item, "originalname", item.name))
        if name and name not in needed:
            needed.append(name)
    with sync_playwright() as playwright:
        context = launch_chromium(playwright, tmp_path_factory.mktemp("chromium") / "profile")
        context.set_default_timeout(WAIT_MS)
        session = Session(context, lab)
        session.start(*needed)
        yield session
        context.close()  # the kernels stop with the server (lab fixture)
        (ARTIFACTS / "timings.txt").write_text("\n".join(session.timings) + "\n")
