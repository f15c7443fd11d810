"""Idle culling on a real JupyterHub (issue #41.3): deploy/jupyterhub_config.py runs jupyterhub-idle-culler as a
hub service, its limit read from COURSE_CULL_TIMEOUT (an hour when unset; this test sets seconds).

A student logs in (their own Linux account where the test can make one, else the test's user), saves an answer in
their copy of the welcome notebook through their server, and leaves it idle: the culler must stop the server (the
hub's log names the culler doing it) and every process of it must be gone; at the next login the notebook they saved
is there as they left it, not replaced by a fresh copy. Times go to test-artifacts/browser/jupyterhub_cull.txt, the hub's log beside it.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request

import pytest

from browser.hub import ROOT, Hub, missing_hub_reason, released_course
from browser.os_users import accounts, missing_accounts_reason, shared_account
from browser.session import ARTIFACTS

pytestmark = [pytest.mark.timeout(600), pytest.mark.browser, pytest.mark.slow]

CULL_SECONDS = 20  # the idle limit this test gives the culler (it checks every 5 s)
WAIT_FOR_CULL = 300  # at most this long for the server to be stopped (the hub's own start may be slow under load)
WELCOME = "course/00_welcome.ipynb"


def _contents(hub: Hub, user: str, method: str = "GET", body: dict | None = None) -> dict:
    """The student's welcome notebook through their server's contents API (as JupyterLab reads and saves it)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(hub.url(f"user/{user}/api/contents/{WELCOME}"), data=data, method=method,
                                     headers={"Authorization": f"token {hub.api_token}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)


def test_an_idle_server_is_culled_and_the_students_saved_work_is_there_at_the_next_login():
    reason = missing_hub_reason()
    if reason:
        pytest.skip(reason)
    with released_course() as (state, release):
        missing = missing_accounts_reason(ROOT, state)
        with accounts("documented") if missing is None else shared_account("alice") as (user,):
            hub = Hub(state / "hub", release, {user}, os_users=missing is None,
                      hub_env={"COURSE_CULL_TIMEOUT": str(CULL_SECONDS)}).start()
            try:
                _culled_then_back(hub, user)
            finally:
                hub.stop()
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                (ARTIFACTS / "jupyterhub_cull.log").write_text(hub.log_tail(1_000_000))


def _culled_then_back(hub: Hub, user: str) -> None:
    assert hub.log_in(user) == "ready", hub.log_tail()
    notebook = _contents(hub, user)["content"]
    answer = f"# my answer {os.urandom(4).hex()}"
    notebook["cells"].append({"cell_type": "code", "source": answer, "metadata": {}, "outputs": [],
                              "execution_count": None})
    _contents(hub, user, "PUT", {"type": "notebook", "format": "json", "content": notebook})
    server_processes = hub.processes_of(user)
    assert server_processes, "the student's server has no process the test can see"

    saved = time.monotonic()
    while time.monotonic() < saved + WAIT_FOR_CULL:
        if hub.api(f"users/{user}")["servers"].get("") is None:
            break
        time.sleep(2)
    culled_after = time.monotonic() - saved
    assert hub.api(f"users/{user}")["servers"].get("") is None, f"not culled within {WAIT_FOR_CULL} s"
    assert f"Culling server {user}" in hub.log_tail(200_000), "the server stopped, but not by the culler"
    time.sleep(2)
    assert not [p for p in server_processes if p.is_running() and p.status() != "zombie"], server_processes

    assert hub.log_in(user) == "ready", hub.log_tail()
    cells = _contents(hub, user)["content"]["cells"]
    assert cells[-1]["source"] == answer, "the notebook saved before the cull is not the one served after it"
    assert not (hub.home(user) / "course" / "00_welcome.updated.ipynb").exists()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    text = f"idle limit {CULL_SECONDS} s: server culled {culled_after:.0f} s after the student's last save\n"
    (ARTIFACTS / "jupyterhub_cull.txt").write_text(text)
    print(text)
