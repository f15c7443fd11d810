"""A real JupyterHub on 127.0.0.1 for the hub tests: deploy/jupyterhub_config.py as it is, with only the
test's overrides (DummyAuthenticator with one password, random free ports, configurable-http-proxy from
`make setup-test`'s .hub/ folder, and the spawner: SimpleLocalProcessSpawner with homes in a tmp folder, or,
with ``os_users``, the deploy's own LocalProcessSpawner running each student as their Linux account).

Covered: why the hub cannot run here (``missing_hub_reason``), the course's student version built once as an
install builds it (``build_release``; in a fresh folder students can enter: ``released_course``), starting and
stopping the hub, logging a student in over HTTP and waiting for their server (``log_in``), and reading the
memory of a student's processes (their single-user server and its kernels).
Left out: driving the browser (the test files), anything about one notebook.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from browser.support import QUIET_PORTS, quiet_port

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_CONFIG = ROOT / "deploy" / "jupyterhub_config.py"
LOCAL_PROXY = ROOT / ".hub" / "node_modules" / ".bin" / "configurable-http-proxy"


def proxy_command() -> str | None:
    """configurable-http-proxy: the one `make setup-test` installs in .hub/, else one on PATH."""
    return str(LOCAL_PROXY) if LOCAL_PROXY.exists() else shutil.which("configurable-http-proxy")


def build_release(course: Path, out: Path) -> Path:
    """The student version of ``course`` in ``out``, built once as an install builds it (docs/jupyterhub.md:
    ``make release``, then opened to the students' accounts); students' logins copy from it."""
    command = [sys.executable, "-m", "course_utils.lab.cli", "release", "--source", str(course), "--out", str(out)]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
    subprocess.run(["chmod", "-R", "a+rX", str(out)], check=True)  # release's folder is 700; students read it
    return out


@contextmanager
def released_course() -> Iterator[tuple[Path, Path]]:
    """``(state, student_version)``: a fresh folder that students' accounts can enter (pytest's tmp is closed to
    them) holding a copy of the course and its student version (``build_release``); removed afterwards."""
    state = Path(tempfile.mkdtemp(prefix="course-hub-"))
    state.chmod(0o755)
    try:
        course = state / "course"
        skip = shutil.ignore_patterns("student", ".ipynb_checkpoints", "src", "*.py")
        shutil.copytree(ROOT / "notebooks", course, ignore=skip)
        yield state, build_release(course, state / "student")
    finally:
        shutil.rmtree(state, ignore_errors=True)


def missing_hub_reason() -> str | None:
    """Why a JupyterHub cannot run here (``None`` when it can)."""
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        return "the Python package `jupyterhub` is not installed (pip install -e '.[test]')"
    if shutil.which("node") is None:
        return "node is not installed, so configurable-http-proxy cannot run (apt-get install nodejs npm)"
    if proxy_command() is None:
        return "configurable-http-proxy is not installed: `make setup-test` installs it into .hub/ where npm exists"
    return None


@dataclass
class Hub:
    """``Hub(tmp, notebooks, {"alice", "bob"}).start()``; students log in at ``hub.url("hub/login")``."""

    state: Path  # the hub's database, logs, the students' homes and the hand-in folder
    notebooks: Path  # the course notebooks the students' copies are made from
    users: set[str]
    password: str = field(default_factory=lambda: os.urandom(8).hex())
    port: int = field(default_factory=quiet_port)
    os_users: bool = False  # LocalProcessSpawner: each student's server runs as their own Linux account
    deploy_timeouts: bool = False  # keep the deploy config's start and HTTP timeouts (else 180 s each)
    api_token: str = field(default_factory=lambda: os.urandom(16).hex())
    hub_env: dict[str, str] = field(default_factory=dict)  # more environment for the hub (the config reads it)
    process: subprocess.Popen | None = None

    @property
    def homes(self) -> Path:
        """The students' homes (SimpleLocalProcessSpawner's); with ``os_users``, see ``home``."""
        return self.state / "home"

    def home(self, user: str) -> Path:
        if self.os_users:
            import pwd

            return Path(pwd.getpwnam(user).pw_dir)
        return self.homes / user

    @property
    def handin(self) -> Path:
        return self.state / "handin"

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def _lab_config(self) -> Path:
        """JupyterLab settings for every student's server: nothing fetched from the internet, JupyterLab's
        app object readable by the test, every cell rendered (no lazy windowing) as in the other browser tests."""
        config = self.state / "jupyter-config"
        settings = self.state / "user-settings"
        tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
        tracker.parent.mkdir(parents=True, exist_ok=True)
        tracker.write_text(json.dumps({"windowingMode": "none"}))
        news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        news.parent.mkdir(parents=True, exist_ok=True)
        news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        config.mkdir(parents=True, exist_ok=True)
        lab = {
            "news_url": None,
            "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
            "extension_manager": "readonly",
            "user_settings_dir": str(settings),
            "expose_app_in_browser": True,
        }
        (config / "jupyter_server_config.json").write_text(json.dumps({"LabApp": lab}, indent=1))
        # jupyter_core's one-off migration from IPython writes a marker here at a server's start once ~/.ipython
        # exists (a student's second login, their kernel made it); the folder is the test's, so say it is done
        (config / "migrated").touch()
        return config

    def _write_config(self) -> Path:
        env = {
            "COURSE_NOTEBOOKS": str(self.notebooks),
            "JUPYTER_CONFIG_DIR": str(self._lab_config()),
            "JUPYTER_PLATFORM_DIRS": "1",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        }
        lines = [
            f"load_subconfig({str(DEPLOY_CONFIG)!r})",
            f"c.JupyterHub.bind_url = 'http://127.0.0.1:{self.port}'",
            f"c.JupyterHub.hub_bind_url = 'http://127.0.0.1:{quiet_port()}'",
            f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{quiet_port()}'",
            f"c.ConfigurableHTTPProxy.command = [{proxy_command()!r}]",
            f"c.JupyterHub.db_url = 'sqlite:///{self.state / 'jupyterhub.sqlite'}'",
            f"c.JupyterHub.cookie_secret_file = {str(self.state / 'cookie_secret')!r}",
            "c.JupyterHub.authenticator_class = 'dummy'",
            f"c.DummyAuthenticator.password = {self.password!r}",
            f"c.Authenticator.allowed_users = {set(self.users)!r}",
            f"c.Spawner.environment.update({env!r})",
            # the test reads each student's server state through the REST API with this token
            f"c.JupyterHub.services.append({{'name': 'course-test', 'api_token': {self.api_token!r}}})",
            "c.JupyterHub.load_roles.append({'name': 'course-test', 'services': ['course-test'],"
            " 'scopes': ['admin:users', 'admin:servers', 'access:servers']})",
            # each student's server on a port below the ephemeral range (the spawner's own pick, an ephemeral
            # port, was once taken by the other test worker's kernel before the server bound it)
            "import random as _random, socket as _socket",
            "_deploy_hook = c.Spawner.pre_spawn_hook",
            "def _quiet_port_then_deploy_hook(spawner):",
            "    while True:",
            f"        port = _random.randrange({QUIET_PORTS.start}, {QUIET_PORTS.stop})",
            "        with _socket.socket() as sock:",
            "            try:",
            "                sock.bind(('127.0.0.1', port))",
            "            except OSError:",
            "                continue",
            "        break",
            "    spawner.port = port",
            "    return _deploy_hook(spawner)",
            "c.Spawner.pre_spawn_hook = _quiet_port_then_deploy_hook",
        ]
        if not self.os_users:
            lines += ["c.JupyterHub.spawner_class = 'simple'",
                      f"c.SimpleLocalProcessSpawner.home_dir_template = {str(self.homes / '{username}')!r}"]
        if not self.deploy_timeouts:
            lines.append("c.Spawner.start_timeout = c.Spawner.http_timeout = 180")
        if os.geteuid() == 0 and not self.os_users:  # students run as the hub's user: JupyterLab refuses root untold
            lines.append("c.Spawner.args = ['--ServerApp.allow_root=True']")
        path = self.state / "jupyterhub_config.py"
        path.write_text("\n".join(lines) + "\n")
        return path

    def start(self, timeout: float = 120.0) -> Hub:
        """Start the hub (it starts the proxy) and wait until its API answers through the proxy."""
        self.state.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        env = dict(os.environ)
        env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
        env.update(COURSE_HANDIN=str(self.handin), **self.hub_env)
        env.pop("JUPYTER_CONFIG_DIR", None)
        log = (self.state / "jupyterhub.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)],
            cwd=self.state, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterHub exited early; log:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url("hub/api/"), timeout=5) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"JupyterHub did not answer within {timeout:.0f} s; log:\n{self.log_tail()}")

    def log_tail(self, n_chars: int = 6000) -> str:
        path = self.state / "jupyterhub.log"
        return path.read_text(errors="replace")[-n_chars:] if path.exists() else ""

    def api(self, path: str) -> dict:
        """GET the hub's REST API (``hub/api/<path>``) with the test's token."""
        headers = {"Authorization": f"token {self.api_token}"}
        request = urllib.request.Request(self.url(f"hub/api/{path}"), headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def log_in(self, user: str, timeout: float = 600.0) -> str:
        """``user`` signs in on the login form, as a browser does, and the hub spawns their server; returns
        "ready" once the hub reports it ready and it answers through the proxy, else why not ("failed", with the
        hub's reason in its log). The hub's own start and HTTP timeouts decide; ``timeout`` only bounds the wait."""
        import requests

        with requests.Session() as browser:
            form = browser.get(self.url("hub/login"), timeout=60)
            xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form.text)
            data = {"username": user, "password": self.password, "_xsrf": xsrf.group(1) if xsrf else ""}
            signed_in = browser.post(self.url("hub/login"), data=data, timeout=60, allow_redirects=False)
            if signed_in.status_code != 302:
                return f"sign-in refused ({signed_in.status_code})"
            browser.get(self.url("hub/spawn"), timeout=60, allow_redirects=False)  # the login's redirect starts it
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            server = self.api(f"users/{user}").get("servers", {}).get("")
            if server is None or not (server["ready"] or server["pending"]):
                return "failed"
            if server["ready"]:
                status = urllib.request.Request(self.url(f"user/{user}/api/status"),
                                                headers={"Authorization": f"token {self.api_token}"})
                with urllib.request.urlopen(status, timeout=30) as response:
                    return "ready" if response.status == 200 else f"server answered {response.status}"
            time.sleep(0.5)
        return f"still pending after {timeout:.0f} s"

    def processes_of(self, user: str) -> list[psutil.Process]:
        """The student's single-user server and everything it started (kernels), by JUPYTERHUB_USER."""
        found = []
        for proc in psutil.Process(self.process.pid).children(recursive=True):
            try:
                if proc.environ().get("JUPYTERHUB_USER") == user:
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        return found

    def memory_mib(self, user: str) -> dict[str, float]:
        """The student's processes' memory in MiB: ``rss``, ``pss``, ``uss`` of all together, and ``server_uss``
        of the single-user server alone (the rest is their kernels). RSS counts every page they map, libraries
        shared with other students' processes included; PSS splits each shared page among the processes
        mapping it; USS counts only pages no other process maps: what one more student adds."""
        total = dict.fromkeys(("rss", "pss", "uss", "server_uss"), 0.0)
        for proc in self.processes_of(user):
            info = proc.memory_full_info()
            total["rss"] += info.rss / 2**20
            total["pss"] += getattr(info, "pss", info.rss) / 2**20
            total["uss"] += info.uss / 2**20
            if any("jupyterhub-singleuser" in part for part in proc.cmdline()):
                total["server_uss"] += info.uss / 2**20
        return total

    def stop(self) -> None:
        """SIGTERM: the hub stops the students' servers and the proxy; then SIGKILL whatever it left."""
        if self.process is None or self.process.poll() is not None:
            return
        children = psutil.Process(self.process.pid).children(recursive=True)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        _, alive = psutil.wait_procs(children, timeout=10)
        for proc in alive:
            proc.kill()
