"""The course served to a class by a real JupyterHub (issue #28): deploy/jupyterhub_config.py as shipped, on
127.0.0.1 behind configurable-http-proxy, with a dummy password and every student run as this test's own OS
user (SimpleLocalProcessSpawner, homes in a tmp folder; tests/browser/hub.py).

Two students log in through headless Chromium. Each gets their own copy of the course on first login (made
by `course-lab update`, as `make lab` does, from the student version built once as an install builds it) and
lands on their 00_welcome; alice types her stable_softmax, bob
leaves his untouched; each runs the notebook through the proxy, the welcome slider renders and answers, and
each hands the notebook in (the file browser's copy into ~/handin, the hub-made folder <handin>/<user>).
`course-lab grade` grades the hand-in folder: alice full marks, bob none. A second login keeps alice's edits,
and the course's own notebooks are left unchanged. Not checked here (every student is one OS user): that one
student cannot read another's home or hand-in folder, and that the install is not writable to them; those
come from Linux accounts and root-owned files in a real deployment (docs/jupyterhub.md).
The first-login time and each student's memory go to test-artifacts/browser/jupyterhub.txt.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from browser.hub import DEPLOY_CONFIG, ROOT, Hub, build_release, missing_hub_reason
from browser.session import ARTIFACTS, NOTEBOOKS, WAIT_MS, check_welcome_slider
from browser.support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    RequestLog,
    missing_browser_reason,
    start_run_all,
    wait_notebook_shown,
    wait_run_all,
)

pytestmark = pytest.mark.timeout(600)

STUDENTS = ("alice", "bob")
WELCOME = "00_welcome.ipynb"
ALICE_SOLUTION = """def stable_softmax(x: torch.Tensor) -> torch.Tensor:
    exps = (x - x.max(dim=-1, keepdim=True).values).exp()
    return exps / exps.sum(dim=-1, keepdim=True)
"""
_TYPE_INTO_EXERCISE_JS = """(source) => {
  const cells = window.jupyterapp.shell.currentWidget.content.widgets;
  const cell = cells.find(c => c.model.type === 'code'
                          && c.model.sharedModel.getSource().includes('def stable_softmax('));
  cell.model.sharedModel.setSource(source);
}"""
_HAND_IN_JS = """async (name) => {
  const app = window.jupyterapp;
  await app.commands.execute('docmanager:save');
  const copied = await app.serviceManager.contents.copy('course/' + name, 'handin');  // the file browser's paste
  return copied.path;
}"""


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.ipynb"))}


def _log_in(browser, hub: Hub, user: str, requests: RequestLog):
    """A fresh browser profile logs ``user`` in; returns (page, seconds from Sign in to their notebook shown)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    context.set_default_timeout(WAIT_MS)
    context.on("request", requests)
    page = context.new_page()
    page.goto(hub.url("hub/login"), wait_until="domcontentloaded")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.password)
    start = time.monotonic()
    page.click("#login_submit")
    _wait_for_notebook(page, hub)
    seconds = time.monotonic() - start
    assert page.url.startswith(hub.url(f"user/{user}/")), page.url
    shown = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
    assert shown == f"course/{WELCOME}", shown
    return page, seconds


def _wait_for_notebook(page, hub: Hub, timeout_s: float = 180.0) -> None:
    """Wait for the student's notebook; fail at once, with the hub's log, if their copy could not be made."""
    deadline = time.monotonic() + timeout_s
    while not page.locator(".jp-Notebook .jp-Cell").count():
        log = hub.log_tail(20_000)
        if "first-login.sh: " in log or time.monotonic() > deadline:  # its own message, or the shell's
            raise AssertionError(f"no notebook for the student at {page.url}; the hub's log:\n{log[-6000:]}")
        time.sleep(0.25)
    wait_notebook_shown(page)


def _students_work(hub: Hub) -> dict[str, float]:
    """Both students log in, run, check the widget and hand in; returns each one's first-login seconds."""
    from playwright.sync_api import sync_playwright

    requests, pages, first_login = RequestLog(), {}, {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            for user in STUDENTS:  # bob logs in while alice's kernel runs
                page, first_login[user] = _log_in(browser, hub, user, requests)
                if user == "alice":
                    page.evaluate(_TYPE_INTO_EXERCISE_JS, ALICE_SOLUTION)
                start_run_all(page)
                pages[user] = page
            for user, page in pages.items():
                wait_run_all(page)  # raises if a cell raised
                check_welcome_slider(page)
                assert page.evaluate(_HAND_IN_JS, WELCOME) == f"handin/{WELCOME}"
        finally:
            browser.close()
    foreign = requests.foreign()
    assert not foreign, f"a page requested something outside 127.0.0.1: {foreign[:10]}"
    return first_login


def _start_grading(handin: Path, source: Path, out: Path) -> subprocess.Popen:
    """`course-lab grade` over the hand-in folder, as the instructor runs it (see _totals)."""
    from course_utils.lab.grading.sandbox import isolation_problem

    args = ["grade", str(handin), "--out", str(out), "--source", str(source), "--assignment", "00_welcome"]
    args += ["--jobs", "2", "--quiet"] + (["--no-sandbox"] if isolation_problem() else [])
    return subprocess.Popen([sys.executable, "-m", "course_utils.lab.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _totals(grading: subprocess.Popen, out: Path) -> dict[str, tuple[float, float]]:
    """{student: (points, max points)} from the gradebook's TOTAL rows, once the grader finished."""
    output, _ = grading.communicate(timeout=300)
    assert grading.returncode == 0, output
    with out.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["exercise"] == "TOTAL"]
    return {r["student"]: (float(r["points"]), float(r["max_points"])) for r in rows}


def _second_login(course: Path, home: Path) -> subprocess.Popen:
    """The step every login runs before the student's server starts (deploy/first-login.sh), run again."""
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home), "COURSE_NOTEBOOKS": str(course)}
    return subprocess.Popen([str(DEPLOY_CONFIG.parent / "first-login.sh")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _check_after_class(hub: Hub, course: Path, before: dict, grading, second) -> None:
    for user in STUDENTS:  # each student's own copy, each hand-in in their own folder
        assert (hub.homes / user / "course" / WELCOME).exists()
        assert (hub.handin / user / WELCOME).exists()
    assert _digests(course) == before, "a student's session changed the course's own notebooks"
    alice = hub.homes / "alice" / "course" / WELCOME
    output, _ = second.communicate(timeout=120)
    assert second.returncode == 0 and "up to date" in output, output
    assert "x.max(dim=-1, keepdim=True).values" in alice.read_text()  # her edit survived the second login
    totals = _totals(grading, hub.state.parent / "grades.csv")
    assert set(totals) == set(STUDENTS), totals
    assert totals["alice"][0] == totals["alice"][1] > 0 and totals["bob"][0] == 0, totals


@pytest.mark.browser
@pytest.mark.slow
def test_two_students_on_a_real_jupyterhub_run_widgets_hand_in_and_are_graded(tmp_path):
    reason = missing_browser_reason() or missing_hub_reason()
    if reason:
        pytest.skip(reason)
    course = tmp_path / "course"  # a copy: the working tree's notebooks may be rebuilt meanwhile
    shutil.copytree(NOTEBOOKS, course, ignore=shutil.ignore_patterns("student", ".ipynb_checkpoints", "src", "*.py"))
    before = _digests(course)
    student = build_release(course, tmp_path / "student")  # what an install builds once (docs/jupyterhub.md)
    started = time.monotonic()
    hub = Hub(tmp_path / "hub", student, set(STUDENTS)).start()
    hub_start = time.monotonic() - started
    background: list[subprocess.Popen] = []  # the grader and alice's second login, run while the hub stops
    try:
        with ThreadPoolExecutor(1) as pool:  # Playwright's sync API will not run beside the browser fixture's loop
            first_login = pool.submit(_students_work, hub).result()
        memory = {user: hub.memory_mib(user) for user in STUDENTS}
        browsed = time.monotonic() - started
        # the instructor grades while the hub shuts down; alice logs in again meanwhile
        background += [_start_grading(hub.handin, course, tmp_path / "grades.csv"),
                       _second_login(student, hub.homes / "alice")]
    except BaseException:
        print(hub.log_tail())
        raise
    finally:
        hub.stop()
    try:
        _check_after_class(hub, course, before, *background)
    finally:
        for proc in background:  # left running only when a check failed
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    graded = time.monotonic() - started
    lines = [f"hub start {hub_start:.1f} s, browser done at {browsed:.1f} s, graded at {graded:.1f} s"]
    lines += [f"{u}: first login {first_login[u]:.1f} s; memory of server + kernel after 00_welcome ran: RSS "
              "{rss:.0f} MiB, PSS {pss:.0f} MiB, USS {uss:.0f} MiB (server alone {server_uss:.0f})".format(**memory[u])
              for u in STUDENTS]
    assert all(m["server_uss"] and m["uss"] > m["server_uss"] for m in memory.values()), memory  # server and kernel
    (ARTIFACTS / "jupyterhub.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def test_the_deploy_files_agree_and_name_files_that_exist():
    """deploy/jupyterhub_config.py loads; the image (deploy/Dockerfile) copies files that exist, builds the student
    version once and starts the server as the one-server hub does; the Helm values run the same first-login step
    from the same student version, open the same notebook, and set the same memory limits, HTTP timeout and idle
    culling."""
    import yaml
    from traitlets.config.loader import PyFileConfigLoader

    hub = PyFileConfigLoader(DEPLOY_CONFIG.name, str(DEPLOY_CONFIG.parent)).load_config()
    first_login = Path(hub.Spawner.cmd[0])
    assert first_login == DEPLOY_CONFIG.parent / "first-login.sh" and os.access(first_login, os.X_OK)
    assert hub.Spawner.cmd[1:] == ["jupyterhub-singleuser"]
    assert (ROOT / "notebooks" / hub.Spawner.default_url.removeprefix("/lab/tree/course/")).exists()

    dockerfile = (DEPLOY_CONFIG.parent / "Dockerfile").read_text()
    copies = re.findall(r"^COPY (.+) (\S+)$", dockerfile, re.MULTILINE)
    assert copies and all((ROOT / src).exists() for sources, _ in copies for src in sources.split()), copies
    assert ("deploy", "/opt/course/deploy") in copies
    image_cmd = json.loads(re.search(r"^CMD (.+)$", dockerfile, re.MULTILINE).group(1))
    in_image = "/opt/course/" + first_login.relative_to(ROOT).as_posix()
    assert image_cmd == [in_image, "jupyterhub-singleuser"]

    # the image builds the student version once and every login copies from it
    built = re.search(r"course-lab release --source (\S+) --out (\S+)", dockerfile)
    assert built and built.group(1) == "/opt/course/notebooks", dockerfile
    assert re.search(rf"^ENV .*COURSE_NOTEBOOKS={built.group(2)}\s", dockerfile, re.MULTILINE), dockerfile
    assert hub.Spawner.environment["COURSE_NOTEBOOKS"] in (str(ROOT / "student"), str(ROOT / "notebooks"))

    chart = yaml.safe_load((DEPLOY_CONFIG.parent / "values.yaml").read_text())
    values = chart["singleuser"]
    assert values["cmd"] == image_cmd
    assert values["defaultUrl"] == hub.Spawner.default_url
    assert values["memory"] == {"guarantee": hub.Spawner.mem_guarantee, "limit": hub.Spawner.mem_limit}
    assert values["extraEnv"]["OMP_NUM_THREADS"] == hub.Spawner.environment["OMP_NUM_THREADS"]
    assert values["extraEnv"]["COURSE_NOTEBOOKS"] == built.group(2)
    assert chart["hub"]["config"]["KubeSpawner"]["http_timeout"] == hub.Spawner.http_timeout > 30
    for name in ("COURSE_KERNEL_MEMORY_MB", "JUPYTER_PATH"):  # the same kernel memory ceiling, from the image's copy
        assert values["extraEnv"][name] == hub.Spawner.environment[name].replace(str(ROOT), "/opt/course")
    services = hub.JupyterHub.services.get_value([])
    culler = next(service["command"] for service in services if service["name"] == "idle-culler")
    assert culler[1:] == ["-m", "jupyterhub_idle_culler", f"--timeout={chart['cull']['timeout']}",
                          f"--cull-every={chart['cull']['every']}"] and chart["cull"]["enabled"]
