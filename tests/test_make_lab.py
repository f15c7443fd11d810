"""`make lab` (the README's first command) really serves the course: run the exact command it
prints, with a free port and no browser, and fetch the welcome notebook through the server."""

from __future__ import annotations

import json
import shlex
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_serves_the_welcome_notebook():
    port = _free_port()
    dry = subprocess.run(["make", "-n", "lab", f"PORT={port}"], cwd=ROOT, capture_output=True, text=True, check=True)
    command = next(line for line in dry.stdout.splitlines() if "jupyter lab" in line)
    assert "notebooks/00_welcome.ipynb" in command
    token = "course-test-token"
    args = shlex.split(command) + ["--no-browser", "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}"]
    server = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/api/contents/00_welcome.ipynb?token={token}&content=0"
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
        assert info["name"] == "00_welcome.ipynb" and info["type"] == "notebook"
    finally:
        server.terminate()
        server.wait(timeout=30)
