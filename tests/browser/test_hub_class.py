"""A class logging in to a real JupyterHub at once, on a busy server, each student as their own Linux account
(issues #41 and #42): deploy/jupyterhub_config.py as shipped, its start and HTTP timeouts included, serving the
student version built once at install (``course-lab release``), as docs/jupyterhub.md installs it.

Two students sign in on the login form at the same moment while a busy loop holds every core; each first
login must be ready before the hub's own timeouts give up (the test sets no timeout of its own on the spawn).
Where the test can make Linux accounts (root, a Python other accounts can run), the students are real accounts,
one made by the documented ``useradd`` and one by a bare ``useradd -m`` with its home left 755 (Debian 12's
default): after the first login each home, ~/course and hand-in folder is 700 and theirs, the course served to
them is not theirs to change, neither student can read, list or write the other's notebooks, and a kernel a
student starts runs as them, under the deploy's memory ceiling per kernel, and cannot signal the other's
server. Elsewhere the students share the test's user and only the login is checked. Times go to test-artifacts/browser/jupyterhub_class.txt.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from browser.hub import DEPLOY_CONFIG, ROOT, Hub, missing_hub_reason, released_course
from browser.os_users import accounts, missing_accounts_reason, run_as, shared_account
from browser.session import ARTIFACTS

pytestmark = [pytest.mark.timeout(600), pytest.mark.browser, pytest.mark.slow]

WELCOME = "00_welcome.ipynb"
BUSY_SECONDS = 300  # each busy loop stops by itself after this long, should the test be killed first


@contextmanager
def busy_cores() -> Iterator[int]:
    """A busy loop on every core (two at least), each bounded in time, all killed on exit; yields how many."""
    code = f"import time\nend = time.monotonic() + {BUSY_SECONDS}\nwhile time.monotonic() < end:\n    pass\n"
    loops = [subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
             for _ in range(max(2, os.cpu_count() or 2))]
    try:
        yield len(loops)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


@dataclass
class ClassHub:
    hub: Hub
    users: list[str]
    logins: dict[str, tuple[str, float]]  # user: (outcome, seconds from Sign in to their server answering)
    accounts_missing: str | None  # why the students are not separate Linux accounts here (None: they are)


def _deploy_timeouts() -> tuple[float, float]:
    from traitlets.config.loader import PyFileConfigLoader

    spawner = PyFileConfigLoader(DEPLOY_CONFIG.name, str(DEPLOY_CONFIG.parent)).load_config().Spawner
    return spawner.start_timeout, spawner.http_timeout


def _deploy_kernel_ceiling_mib() -> int:
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader(DEPLOY_CONFIG.name, str(DEPLOY_CONFIG.parent)).load_config()
    return int(config.Spawner.environment["COURSE_KERNEL_MEMORY_MB"])


@pytest.fixture(scope="module")
def class_hub() -> Iterator[ClassHub]:
    reason = missing_hub_reason()
    if reason:
        pytest.skip(reason)
    with released_course() as (state, release):
        missing = missing_accounts_reason(ROOT, state)
        made = accounts("documented", "legacy") if missing is None else shared_account("alice", "bob")
        with made as users:
            hub = Hub(state / "hub", release, set(users), os_users=missing is None, deploy_timeouts=True).start()
            try:
                with busy_cores(), ThreadPoolExecutor(len(users)) as pool:
                    logins = dict(zip(users, pool.map(lambda user: _timed_login(hub, user), users)))
                yield ClassHub(hub, users, logins, missing)
            except BaseException:
                print(hub.log_tail())
                raise
            finally:
                hub.stop()


def _timed_login(hub: Hub, user: str) -> tuple[str, float]:
    start = time.monotonic()
    outcome = hub.log_in(user)
    return outcome, time.monotonic() - start


def _needs_accounts(class_hub: ClassHub) -> None:
    if class_hub.accounts_missing:
        pytest.skip(class_hub.accounts_missing)


def test_a_class_first_login_on_busy_cores_is_ready_within_the_deploy_timeouts(class_hub):
    start_timeout, http_timeout = _deploy_timeouts()
    failed = {user: outcome for user, (outcome, _) in class_hub.logins.items() if outcome != "ready"}
    assert not failed, f"first logins on busy cores failed: {failed}; the hub's log:\n{class_hub.hub.log_tail()}"
    for user in class_hub.users:  # each got their copy of the course, in its student version
        welcome = class_hub.hub.home(user) / "course" / WELCOME
        assert welcome.exists(), f"{user} has no copy of the course; the hub's log:\n{class_hub.hub.log_tail()}"
        welcome = welcome.read_text()
        assert "raise NotImplementedError" in welcome and "# BEGIN SOLUTION" not in welcome
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    line = ", ".join(f"{user} {seconds:.1f} s" for user, (_, seconds) in class_hub.logins.items())
    text = (f"first logins at once on busy cores (Sign in to the server answering): {line}; "
            f"deploy timeouts: start {start_timeout:.0f} s, HTTP {http_timeout:.0f} s\n")
    (ARTIFACTS / "jupyterhub_class.txt").write_text(text)
    print(text)


def test_each_home_and_course_folder_is_closed_to_classmates(class_hub):
    _needs_accounts(class_hub)
    import pwd

    hub = class_hub.hub
    for user in class_hub.users:  # the documented account and the one a bare useradd -m left 755
        uid = pwd.getpwnam(user).pw_uid
        for folder in (hub.home(user), hub.home(user) / "course", hub.handin / user):
            mode = folder.stat()
            assert (stat.S_IMODE(mode.st_mode), mode.st_uid) == (0o700, uid), f"{folder}: {oct(mode.st_mode)}"
        # the course served to every login is root's: a student cannot change what the others get
        changed = run_as(user, "touch", str(hub.notebooks / WELCOME), str(hub.notebooks / "planted.ipynb"))
        assert changed.returncode != 0 and "Permission denied" in changed.stderr, changed
    for owner, other in (class_hub.users, reversed(class_hub.users)):
        course = hub.home(owner) / "course"
        assert run_as(owner, "cat", str(course / WELCOME)).returncode == 0  # the owner can: the commands work
        attempts = {
            "read": ("cat", str(course / WELCOME)),
            "list": ("ls", str(course)),
            "write": ("sh", "-c", f"echo answer > {course / WELCOME}"),
            "add": ("touch", str(course / "planted.ipynb")),
        }
        for what, command in attempts.items():
            done = run_as(other, *command)
            assert done.returncode != 0 and "Permission denied" in done.stderr, (what, owner, other, done)
        assert not (course / "planted.ipynb").exists()


def _start_kernel(hub: Hub, user: str) -> psutil.Process:
    """A kernel started in ``user``'s server through its REST API, as JupyterLab starts one."""
    request = urllib.request.Request(hub.url(f"user/{user}/api/kernels"), data=b"{}", method="POST",
                                     headers={"Authorization": f"token {hub.api_token}"})
    with urllib.request.urlopen(request, timeout=120) as response:
        kernel_id = json.load(response)["id"]
    found = [p for p in hub.processes_of(user) if any(f"kernel-{kernel_id}.json" in part for part in p.cmdline())]
    assert len(found) == 1, hub.processes_of(user)
    return found[0]


def _run_in_kernel(kernel: psutil.Process, code: str) -> str:
    """The value of ``outcome`` after ``code`` ran in ``kernel`` (connected through its connection file, as its
    server does; read from the execute reply, so no output can be missed while the kernel starts)."""
    from jupyter_client import BlockingKernelClient

    arguments = kernel.cmdline()
    client = BlockingKernelClient(connection_file=arguments[arguments.index("-f") + 1])
    client.load_connection_file()
    client.start_channels(hb=False)
    try:
        msg_id = client.execute(code, silent=True, user_expressions={"outcome": "outcome"})
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            reply = client.get_shell_msg(timeout=180)
            if reply["parent_header"].get("msg_id") == msg_id:
                assert reply["content"]["status"] == "ok", reply["content"]
                return reply["content"]["user_expressions"]["outcome"]["data"]["text/plain"].strip("'")
        raise AssertionError("the kernel did not reply within 180 s")
    finally:
        client.stop_channels()


def test_a_students_kernel_runs_as_them_and_cannot_signal_a_classmates_server(class_hub):
    _needs_accounts(class_hub)
    import pwd

    owner, other = class_hub.users
    kernel = _start_kernel(class_hub.hub, owner)
    assert kernel.uids().real == kernel.uids().effective == pwd.getpwnam(owner).pw_uid
    servers = [p for p in class_hub.hub.processes_of(other) if "jupyterhub-singleuser" in " ".join(p.cmdline())]
    assert servers, class_hub.hub.processes_of(other)
    probe = ("import os, signal\n"
             "try:\n"
             "    os.kill({}, signal.SIGTERM)\n"
             "    outcome = 'signalled'\n"
             "except PermissionError:\n"
             "    outcome = 'refused'\n")
    own = kernel.parent().pid  # the kernel's own server: the probe can signal its owner's processes (signal 0 only)
    assert _run_in_kernel(kernel, probe.replace("signal.SIGTERM", "0").format(own)) == "signalled"
    target = servers[0].pid
    assert _run_in_kernel(kernel, probe.format(target)) == "refused"
    assert servers[0].is_running() and class_hub.hub.api(f"users/{other}")["servers"][""]["ready"]
    # the deploy's kernel spec started it (the kernel has answered, so its launcher has run): under its ceiling
    ceiling = _deploy_kernel_ceiling_mib()
    limits = Path(f"/proc/{kernel.pid}/limits").read_text()  # prlimit on another account's process needs more
    assert re.search(rf"^Max address space\s+{ceiling * 2**20}\s+{ceiling * 2**20}\s+bytes", limits, re.M), limits
