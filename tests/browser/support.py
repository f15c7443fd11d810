"""Helpers for the browser tests: a private JupyterLab server, headless Chromium, and checks.

Covered: starting/stopping JupyterLab on 127.0.0.1 with a random port and token and with news,
update checks and the PyPI extension manager turned off; launching Debian's Chromium through
Playwright (never a downloaded browser); opening a notebook, waiting for its kernel, running all
cells; reading widget readouts by CSS class (see WIDGET_CONTRACT.md); checking that a
screenshot is not blank; recording every request the page makes.
Left out: anything specific to one notebook (that lives in the tests/browser/test_<widget>.py files).
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
LOCAL_SCHEMES = {"data", "blob", "about", "chrome-error"}


QUIET_PORTS = range(20_000, 32_000)  # below Linux's ephemeral range (32768-60999), where kernels' ports land


def quiet_port() -> int:
    """A free TCP port below the ephemeral range, for a server a test starts later than it picks the port.

    An ephemeral port (bind to port 0) may be handed to any process next, such as the other worker's kernels;
    a port from ``QUIET_PORTS`` is taken only by someone who chose it, e.g. ``quiet_port()`` -> ``24817``.
    """
    for _ in range(100):
        port = random.choice(QUIET_PORTS)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {QUIET_PORTS}")


def missing_browser_reason() -> str | None:
    """Why the browser tests cannot run here (``None`` when they can), e.g. no Chromium."""
    if not CHROMIUM.exists():
        return (
            f"Chromium not found at {CHROMIUM} (install it with `apt-get install -y chromium`, "
            "or set COURSE_CHROMIUM to a Chromium binary); browser tests not run"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package `playwright` is not installed (pip install -e '.[test]')"
    return None


@dataclass
class LabServer:
    """A JupyterLab server on 127.0.0.1 serving ``root_dir``; ``start()`` then ``stop()``.

    Example: ``lab = LabServer(tmp / "nb", tmp / "jupyter").start(); lab.url("lab")``.
    """

    root_dir: Path
    state_dir: Path
    port: int = field(default_factory=quiet_port)
    token: str = field(default_factory=lambda: os.urandom(16).hex())
    process: subprocess.Popen | None = None
    log_path: Path | None = None

    def _write_config(self) -> dict[str, str]:
        config_dir = self.state_dir / "config"
        settings_dir = self.state_dir / "user-settings"
        notification = settings_dir / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        notification.parent.mkdir(parents=True, exist_ok=True)
        notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        # Render every cell fully (no lazy windowing), so offscreen widgets have text and pixels.
        tracker = settings_dir / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
        tracker.parent.mkdir(parents=True, exist_ok=True)
        tracker.write_text(json.dumps({"windowingMode": "none"}))
        config_dir.mkdir(parents=True, exist_ok=True)
        config = {
            "ServerApp": {
                "ip": "127.0.0.1",
                "port": self.port,
                "port_retries": 0,
                "open_browser": False,
                "root_dir": str(self.root_dir),
                "allow_root": True,
                "jpserver_extensions": {"jupyter_lsp": False, "jupyter_server_terminals": False},
            },
            "IdentityProvider": {"token": self.token},
            "LabApp": {
                "news_url": None,
                "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
                "extension_manager": "readonly",
                "user_settings_dir": str(settings_dir),
                "workspaces_dir": str(self.state_dir / "workspaces"),
                "expose_app_in_browser": True,
            },
        }
        (config_dir / "jupyter_server_config.json").write_text(json.dumps(config, indent=1))
        env = dict(os.environ)
        env.update(
            JUPYTER_CONFIG_DIR=str(config_dir),
            JUPYTER_RUNTIME_DIR=str(self.state_dir / "runtime"),
            JUPYTER_PLATFORM_DIRS="1",
            MPLBACKEND="module://matplotlib_inline.backend_inline",
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
        env.pop("JUPYTER_TOKEN", None)
        return env

    def url(self, path: str = "", **query: str) -> str:
        """``lab.url("lab/tree/x.ipynb")`` -> ``http://127.0.0.1:PORT/lab/tree/x.ipynb?token=...``."""
        query = {"token": self.token, **query}
        return f"http://127.0.0.1:{self.port}/{path}?{urllib.parse.urlencode(query)}"

    def start(self, timeout: float = 120.0) -> LabServer:
        """Start the server and wait until ``/api/status`` answers (raises RuntimeError if not)."""
        env = self._write_config()
        self.log_path = self.state_dir / "jupyterlab.log"
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser"],
            cwd=self.root_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited early; log:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=5) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s; log:\n{self.log_tail()}")

    def log_tail(self, n_chars: int = 4000) -> str:
        """The last ``n_chars`` characters of the server's log (for failure messages)."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-n_chars:]

    def stop(self) -> None:
        """Shut the server (and the kernels it started) down: SIGTERM, then SIGKILL after 15 s."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            urllib.request.urlopen(urllib.request.Request(self.url("api/shutdown"), method="POST"), timeout=5)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def launch_chromium(playwright, user_data_dir: Path):
    """A persistent Chromium context (fresh profile in ``user_data_dir``) with the offline flags."""
    shutil.rmtree(user_data_dir, ignore_errors=True)
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir),
        executable_path=str(CHROMIUM),
        headless=True,
        args=CHROMIUM_ARGS,
        viewport={"width": 1400, "height": 1000},
        service_workers="block",
    )


class RequestLog:
    """Records every URL a page (or context) requests; ``foreign()`` lists those not on 127.0.0.1.

    Example: ``log = RequestLog(); context.on("request", log); ...; assert not log.foreign()``.
    """

    def __init__(self) -> None:
        self.urls: list[str] = []

    def __call__(self, request) -> None:
        self.urls.append(request.url)

    def foreign(self) -> list[str]:
        """URLs whose scheme is not data:/blob:/about: and whose host is not the loopback."""
        bad = []
        for url in self.urls:
            parsed = urllib.parse.urlsplit(url)
            if parsed.scheme in LOCAL_SCHEMES:
                continue
            if parsed.scheme in ("http", "https", "ws", "wss") and parsed.hostname in LOCAL_HOSTS:
                continue
            bad.append(url)
        return bad


# --- JupyterLab driving ------------------------------------------------------------------------

_KERNEL_STATUS_JS = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return k ? k.status : null;
}"""


def goto_notebook(page, lab: LabServer, name: str) -> None:
    """Start loading notebook ``name`` (relative to the server root) in JupyterLab; returns early."""
    page.goto(lab.url(f"lab/tree/{name}", reset=""), wait_until="commit")


def wait_notebook_shown(page, timeout_ms: float = 180_000) -> None:
    """Wait until JupyterLab shows the notebook's cells and has a kernel session for it."""
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout_ms)
    page.wait_for_function(
        """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                   return !!(w && w.sessionContext && w.sessionContext.session); }""",
        timeout=timeout_ms, polling=250,
    )
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")  # more room for the notebook


def open_notebook(page, lab: LabServer, name: str, timeout_ms: float = 180_000) -> None:
    """Open ``name`` in JupyterLab and wait for an idle kernel."""
    goto_notebook(page, lab, name)
    wait_notebook_shown(page, timeout_ms)
    page.wait_for_function(
        f"({_KERNEL_STATUS_JS})() === 'idle'", timeout=timeout_ms, polling=250
    )


def start_run_all(page) -> None:
    """Ask JupyterLab to run every cell of the current notebook; returns at once (see wait_run_all)."""
    page.evaluate(
        """() => {
          const app = window.jupyterapp;
          const panel = app.shell.currentWidget;
          panel.sessionContext.ready.then(() => app.commands.execute('notebook:run-all-cells'));
        }"""
    )


def wait_run_all(page, timeout_ms: float = 300_000) -> None:
    """Wait until no cell of the current notebook is queued or running and its kernel is idle.

    Raises AssertionError with the traceback when an output is a Python error.
    """
    page.wait_for_function(
        rf"""() => {{
          if (({_KERNEL_STATUS_JS})() !== 'idle') return false;
          const node = window.jupyterapp.shell.currentWidget.node;
          const prompts = [...node.querySelectorAll('.jp-InputArea-prompt')];
          if (prompts.some(p => p.textContent.includes('*'))) return false;
          const code = [...node.querySelectorAll('.jp-CodeCell')];
          return code.length > 0 && code.every(c => /\[\d+\]/.test(
              (c.querySelector('.jp-InputArea-prompt') || {{}}).textContent || ''));
        }}""",
        timeout=timeout_ms,
        polling=250,
    )
    panel_id = page.evaluate("() => window.jupyterapp.shell.currentWidget.id")
    errors = page.locator(f"[id='{panel_id}'] .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    if errors.count():
        raise AssertionError(f"a cell raised an error in JupyterLab:\n{errors.first.inner_text()[-3000:]}")


_OPEN_AND_RUN_JS = """async (paths) => {
  const app = window.jupyterapp;
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const ids = {};
  for (const path of paths) {
    const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
    ids[path] = panel.id;
  }
  for (const path of paths) {
    const panel = [...app.shell.widgets('main')].find(w => w.id === ids[path]);
    await panel.context.ready;
    await panel.sessionContext.ready;
    app.shell.activateById(panel.id);
    for (let i = 0; i < 200 && !(app.shell.currentWidget === panel
         && panel.node.contains(document.activeElement)); i++) await sleep(25);
    app.commands.execute('notebook:run-all-cells');  // queued now; runs while we go on
  }
  return ids;
}"""


def open_and_run_all(page, lab: LabServer, paths: list[str], timeout_ms: float = 180_000) -> dict[str, str]:
    """In ONE JupyterLab tab, open each notebook and start Run All in each (kernels run in parallel).

    Returns ``{path: panel id}``; use ``activate(page, panel_id)`` then ``wait_run_all(page)``.
    """
    if "/lab" not in page.url:
        page.goto(lab.url("lab", reset=""), wait_until="domcontentloaded")
        page.wait_for_function("() => !!window.jupyterapp", timeout=timeout_ms, polling=250)
        page.evaluate("async () => { await window.jupyterapp.restored; window.jupyterapp.shell.collapseLeft(); }")
    page.set_default_timeout(timeout_ms)
    return page.evaluate(_OPEN_AND_RUN_JS, paths)


def activate(page, panel_id: str) -> None:
    """Bring the notebook with this panel id to the front of the JupyterLab tab."""
    page.evaluate("id => window.jupyterapp.shell.activateById(id)", panel_id)
    page.wait_for_function("id => window.jupyterapp.shell.currentWidget.id === id", arg=panel_id)


def run_all_cells(page, timeout_ms: float = 300_000) -> None:
    """Run every cell of the current notebook and wait until all ran and the kernel is idle."""
    start_run_all(page)
    wait_run_all(page, timeout_ms)


def readout_text(locator) -> str:
    """The plain text of an ipywidgets HTML readout, e.g. ``'cat: 0.659\\ndog: 0.242'``."""
    return locator.inner_text().strip()


def image_from_png(png: bytes) -> np.ndarray:
    """Decode PNG bytes (e.g. a Playwright screenshot) to a float array (H, W, C) in [0, 1]."""
    from matplotlib import image as mpimg

    return mpimg.imread(io.BytesIO(png), format="png")


def blank_reason(png: bytes, min_std: float = 0.02, min_ink: float = 0.02) -> str | None:
    """Why a screenshot looks blank (``None`` if it has visible content).

    Blank means (almost) one colour: pixel standard deviation below ``min_std`` or fewer than
    ``min_ink`` of the pixels differing from the median colour (a figure showing only its title
    has ~1% "ink"; a bar chart or heatmap 5-30%). Example:
    ``blank_reason(white_png)`` -> ``'pixel std 0.000 < 0.02 ...'``.
    """
    img = image_from_png(png)[..., :3]
    if img.size == 0 or img.shape[0] < 4 or img.shape[1] < 4:
        return f"image is only {img.shape[1]}x{img.shape[0]} pixels"
    std = float(img.std())
    flat = img.reshape(-1, 3)
    background = np.median(flat, axis=0)
    ink = float((np.abs(flat - background).max(axis=1) > 0.1).mean())
    if std < min_std or ink < min_ink:
        return f"pixel std {std:.3f} (min {min_std}), non-background fraction {ink:.4f} (min {min_ink})"
    return None


def images_differ(png_a: bytes, png_b: bytes, min_mean_diff: float = 1e-3) -> bool:
    """True when two screenshots differ in size or in mean absolute pixel value by > ``min_mean_diff``."""
    a, b = image_from_png(png_a)[..., :3], image_from_png(png_b)[..., :3]
    return a.shape != b.shape or float(np.abs(a - b).mean()) > min_mean_diff


def settle_images(locator) -> None:
    """Wait until every <img> under ``locator`` is fully decoded (a half-decoded image paints
    only its top rows, which would make a screenshot look like a title without a chart)."""
    locator.evaluate(
        """async el => { await Promise.all([...el.querySelectorAll('img')].map(
             i => i.decode().catch(() => null))); }"""
    )


_IMAGE_STATS_JS = """([selector, skipWidgets]) => [...document.querySelectorAll(selector)]
    .filter(img => !(skipWidgets && img.closest('.jupyter-widgets'))).map((img, index) => {
  const w = img.naturalWidth, h = img.naturalHeight;
  if (!img.complete || !w || !h) return {index, w, h, std: 0, ink: 0};
  const canvas = document.createElement('canvas');
  canvas.width = w; canvas.height = h;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#ffffff'; ctx.fillRect(0, 0, w, h);   // transparent PNGs are shown on white
  ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, w, h).data, n = w * h;
  const counts = new Map();
  let sum = 0, sumsq = 0;
  for (let i = 0; i < d.length; i += 4) {
    const key = (d[i] >> 4) << 8 | (d[i + 1] >> 4) << 4 | (d[i + 2] >> 4);
    counts.set(key, (counts.get(key) || 0) + 1);
    for (let c = 0; c < 3; c++) { const v = d[i + c] / 255; sum += v; sumsq += v * v; }
  }
  const mean = sum / (3 * n), std = Math.sqrt(Math.max(0, sumsq / (3 * n) - mean * mean));
  const background = Math.max(...counts.values());
  return {index, w, h, std, ink: 1 - background / n};
})"""


def output_image_stats(page, selector: str = ".jp-OutputArea-output img", skip_widgets: bool = True) -> list[dict]:
    """Pixel statistics of every output image, computed in the page from the decoded image data:
    ``[{'index': 0, 'w': 640, 'h': 480, 'std': 0.21, 'ink': 0.12}, ...]`` (ink = share of pixels
    not of the most common colour). Images inside widgets are skipped unless ``skip_widgets=False``
    (the widget tests check those, as they change)."""
    return page.evaluate(_IMAGE_STATS_JS, [selector, skip_widgets])
