"""`make lab` (the README's first command) really serves the student's course: run the exact commands it
prints, in a scratch copy of the repository's notebooks (so the real notebooks/student is not touched),
with a free port and no browser; the student's copy is made, the link the server prints opens
00_welcome in it, and the server hands that notebook out."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from browser.support import quiet_port

ROOT = Path(__file__).resolve().parents[1]


def _recipe(target: str, port: int) -> list[str]:
    """The commands ``make -n target`` prints, backslash-continued lines joined."""
    dry = subprocess.run(["make", "-n", target, f"PORT={port}"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [line for line in dry.stdout.replace("\\\n", " ").splitlines() if line.strip()]


@contextlib.contextmanager
def served_student_course(tmp_path: Path, token: str = "course-test-token", extra: tuple[str, ...] = ()):
    """Run `make lab`'s own commands in a scratch copy (with a free port, no browser, and any ``extra``
    server options) and yield ``(port, token, log_path)`` once the server hands out the student's
    00_welcome; stop it afterwards."""
    port = quiet_port()
    update, serve = [line for line in _recipe("lab", port) if "course-lab update" in line or "jupyter lab" in line]
    if not (tmp_path / ".venv").exists():
        (tmp_path / ".venv").symlink_to(ROOT / ".venv")
        shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns("student", ".*"))
    subprocess.run(shlex.split(update), cwd=tmp_path, check=True, capture_output=True, text=True)
    args = [*shlex.split(serve), "--no-browser", "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
            *extra]
    log = tmp_path / "server.log"
    with log.open("w") as sink:
        server = subprocess.Popen(args, cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/api/contents/student/00_welcome.ipynb?token={token}&content=0"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    info = json.load(response)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.5)
        assert info["path"] == "student/00_welcome.ipynb" and info["type"] == "notebook"
        yield port, token, log
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_serves_the_students_welcome_notebook(tmp_path):
    (update,) = [line for line in _recipe("lab", 8888) if "course-lab update" in line]
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns("student", ".*"))

    subprocess.run(shlex.split(update), cwd=tmp_path, check=True, capture_output=True, text=True)
    welcome = nbformat.read(str(tmp_path / "notebooks/student/00_welcome.ipynb"), as_version=4)
    code = [c for c in welcome.cells if c.cell_type == "code"]
    assert not any(c.outputs for c in code), "the student's copy must start without outputs"
    assert any("NotImplementedError" in c.source for c in code), "the student's copy must have the exercise stubs"
    assert "# BEGIN SOLUTION" not in json.dumps(welcome)

    # a student's work survives the next `make lab`
    welcome.cells[0].source += "\n\nmy own note"
    nbformat.write(welcome, str(tmp_path / "notebooks/student/00_welcome.ipynb"))
    again = subprocess.run(shlex.split(update), cwd=tmp_path, check=True, capture_output=True, text=True)
    assert "up to date" in again.stdout
    assert "my own note" in (tmp_path / "notebooks/student/00_welcome.ipynb").read_text()

    with served_student_course(tmp_path) as (port, token, log):
        # the link printed for the student (and opened in the browser) is the notebook, not the Launcher
        assert f"127.0.0.1:{port}/lab/tree/student/00_welcome.ipynb?token=" in log.read_text()
        # no "official Jupyter news?" toast: the server hands JupyterLab the course's default for it
        url = f"http://127.0.0.1:{port}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={token}"
        with urllib.request.urlopen(url, timeout=30) as response:
            defaults = json.load(response)["schema"]["properties"]
        assert (defaults["fetchNews"]["default"], defaults["checkForUpdates"]["default"]) == ("false", False)
    assert "my own note" in (tmp_path / "notebooks/student/00_welcome.ipynb").read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["lab", "solutions"])
def test_make_lab_and_solutions_turn_off_jupyterlabs_news_toast(target):
    (serve,) = [line for line in _recipe(target, 8888) if "jupyter lab" in line]
    (folder,) = [a.split("=", 1)[1] for a in shlex.split(serve) if a.startswith("--LabApp.app_settings_dir=")]
    overrides = json.loads((Path(folder) / "overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_solutions_opens_the_solved_welcome_notebook():
    (serve,) = [line for line in _recipe("solutions", 8888) if "jupyter lab" in line]
    assert "--ServerApp.root_dir=notebooks" in serve and "--LabApp.default_url=/lab/tree/00_welcome.ipynb" in serve
    assert (ROOT / "notebooks/00_welcome.ipynb").exists()
