"""Load test of the course's JupyterHub (issue #41.2): N students log in at once to a hub on 127.0.0.1.

The hub is deploy/jupyterhub_config.py as shipped, its timeouts included, serving the student version built once
(tests/browser/hub.py starts it; the students are real Linux accounts where the script runs as root with a Python
other accounts can run, else the script's own user). Each student, as a plain asyncio client (httpx for HTTP,
tornado's websocket client for the kernel): signs in on the login form, which starts their server; waits for it;
opens ~/course/00_welcome.ipynb through the contents API; starts a kernel for it (the sessions API, as JupyterLab
does) and runs its code cells over the kernel's websocket, with the answer typed in, up to the first check, whose
verdict must be a pass; saves the notebook and hands it in (~/handin). Every wait has a deadline, each student a
total deadline, and the script stops the hub (and removes the accounts) whatever happens.

Reported for each N: login to the first check's verdict p50 / p95 / max, failures (sign-in, spawn, kernel, check,
hand-in), the hub's peak RSS (hub, proxy and culler processes), each student's peak RSS (server + kernel), the
CPU-seconds of everything (hub and students, children included) and the load average before and after.

    .venv/bin/python benchmarks/bench_hub_load.py --users 5 10 20 [--json out.json] [--logs FOLDER]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
WELCOME = "course/00_welcome.ipynb"
STEP_SECONDS = 300  # the longest any one request or cell may take
STUDENT_SECONDS = 900  # one student's whole session
SAMPLE_SECONDS = 1.0  # memory sampling period


@dataclass
class Outcome:
    user: str
    failed: str = ""  # the step that failed, with why ("" when every step passed)
    verdict_s: float | None = None  # sign-in to the first check's verdict
    steps: dict[str, float] = field(default_factory=dict)  # seconds since sign-in at the end of each step


def solution_cells() -> list[str]:
    """The code cells of the solution notebook 00_welcome (the student's copy with the answer typed in), up to and
    including the first cell that calls a check."""
    import nbformat

    notebook = nbformat.read(ROOT / "notebooks" / "00_welcome.ipynb", as_version=4)
    cells = []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cells.append(cell.source)
            if "check_" in cell.source and "import" in cell.source:
                break
    return cells


async def run_cell(ws, code: str, session: str) -> tuple[str, str]:
    """Execute ``code`` over the kernel's websocket; returns (status, everything it printed or returned)."""
    msg_id = uuid.uuid4().hex
    header = {"msg_id": msg_id, "msg_type": "execute_request", "session": session, "username": "",
              "version": "5.3", "date": ""}
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}
    await ws.write_message(json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": content,
                                       "channel": "shell", "buffers": []}))
    shown, status, idle = [], None, False
    deadline = time.monotonic() + STEP_SECONDS
    while status is None or not idle:  # the reply, and every output before the kernel goes idle
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout", "".join(shown)
        raw = await asyncio.wait_for(ws.read_message(), left)
        if raw is None:
            return "closed", "".join(shown)
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, body = msg["msg_type"], msg["content"]
        if kind == "stream":
            shown.append(body["text"])
        elif kind in ("execute_result", "display_data"):
            shown.append(body["data"].get("text/plain", ""))
        elif kind == "error":
            shown.append(f"{body['ename']}: {body['evalue']}")
        elif kind == "execute_reply":
            status = body["status"]
        elif kind == "status":
            idle = body["execution_state"] == "idle"
    return status, "".join(shown)


async def student(hub, user: str, cells: list[str]) -> Outcome:
    import httpx
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    outcome, start = Outcome(user), time.monotonic()
    token = {"Authorization": f"token {hub.api_token}"}
    limits = httpx.Timeout(STEP_SECONDS)
    async with httpx.AsyncClient(base_url=hub.url(), timeout=limits) as client:
        def step(name: str) -> None:
            outcome.steps[name] = round(time.monotonic() - start, 1)

        form = await client.get("hub/login")
        xsrf = client.cookies.get("_xsrf") or ""
        signed_in = await client.post("hub/login", data={"username": user, "password": hub.password,
                                                          "_xsrf": xsrf})
        if signed_in.status_code != 302 or form.status_code != 200:
            outcome.failed = f"sign-in: {form.status_code} then {signed_in.status_code}"
            return outcome
        await client.get("hub/spawn")
        step("signed in")
        while True:  # the hub's own start and HTTP timeouts end a spawn that cannot succeed
            server = (await client.get(f"hub/api/users/{user}", headers=token)).json()["servers"].get("")
            if server is None or not (server["ready"] or server["pending"]):
                outcome.failed = "spawn: the hub gave up (its log says why)"
                return outcome
            if server["ready"]:
                break
            if time.monotonic() - start > STUDENT_SECONDS:
                outcome.failed = "spawn: still pending"
                return outcome
            await asyncio.sleep(0.5)
        step("server ready")
        api = f"user/{user}/api"
        notebook = (await client.get(f"{api}/contents/{WELCOME}", headers=token)).json()["content"]
        made = await client.post(f"{api}/sessions", headers=token, json={
            "path": WELCOME, "type": "notebook", "name": "", "kernel": {"name": "python3"}})
        kernel = made.json()["kernel"]["id"]
        step("notebook open, kernel started")
        ws_url = hub.url(f"{api}/kernels/{kernel}/channels").replace("http://", "ws://")
        ws = await websocket_connect(HTTPRequest(ws_url, headers=token, request_timeout=STEP_SECONDS))
        try:
            session = uuid.uuid4().hex
            for code in cells:
                status, shown = await run_cell(ws, code, session)
                if status != "ok":
                    model = (await client.get(f"{api}/kernels/{kernel}", headers=token)).text
                    outcome.failed = f"kernel: a cell ended {status}: {shown[-300:]}; the kernel now: {model[:300]}"
                    return outcome
            if "✅" not in shown:
                outcome.failed = f"check: no pass verdict: {shown[-300:]}"
                return outcome
            outcome.verdict_s = time.monotonic() - start
            step("first check's verdict")
        finally:
            ws.close()
        body = {"type": "notebook", "format": "json", "content": notebook}
        saved = await client.put(f"{api}/contents/{WELCOME}", headers=token, json=body)
        handed = await client.put(f"{api}/contents/handin/00_welcome.ipynb", headers=token, json=body)
        if saved.status_code not in (200, 201) or handed.status_code not in (200, 201):
            outcome.failed = f"hand-in: save {saved.status_code}, hand-in {handed.status_code}"
            return outcome
        step("handed in")
    return outcome


class Sampler(threading.Thread):
    """Peak RSS (MiB) of the hub's own processes and of each student's processes, every SAMPLE_SECONDS."""

    def __init__(self, hub, users: list[str]):
        super().__init__(daemon=True)
        self.hub, self.users, self.stopped = hub, set(users), threading.Event()
        self.hub_peak, self.user_peak = 0.0, dict.fromkeys(users, 0.0)

    def run(self) -> None:
        root = psutil.Process(self.hub.process.pid)
        while not self.stopped.wait(SAMPLE_SECONDS):
            hub_rss, per_user = root.memory_info().rss, dict.fromkeys(self.users, 0)
            for proc in root.children(recursive=True):
                try:
                    owner = proc.environ().get("JUPYTERHUB_USER")
                    rss = proc.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                if owner in per_user:
                    per_user[owner] += rss
                elif owner is None:
                    hub_rss += rss  # the proxy and the culler
            self.hub_peak = max(self.hub_peak, hub_rss / 2**20)
            for user, rss in per_user.items():
                self.user_peak[user] = max(self.user_peak[user], rss / 2**20)


def cpu_seconds(pid: int) -> float:
    """CPU-seconds of ``pid`` and every process below it, with the children they have waited for."""
    total = 0.0
    root = psutil.Process(pid)
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def measure(n_users: int, log: Path | None = None) -> dict:
    """One hub, ``n_users`` students at once; the measurements as a dict (see the module's docstring)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from browser.hub import Hub, missing_hub_reason, released_course
    from browser.os_users import accounts, missing_accounts_reason, shared_account

    reason = missing_hub_reason()
    if reason:
        raise SystemExit(reason)
    cells = solution_cells()
    with released_course() as (state, release):
        missing = missing_accounts_reason(ROOT, state)
        made = accounts(*["documented"] * n_users) if missing is None else \
            shared_account(*(f"student{i}" for i in range(n_users)))
        with made as users:
            hub = Hub(state / "hub", release, set(users), os_users=missing is None, deploy_timeouts=True).start()
            sampler = Sampler(hub, users)
            load_before = os.getloadavg()
            try:
                sampler.start()
                started = time.monotonic()
                outcomes = asyncio.run(_class(hub, users, cells))
                wall = time.monotonic() - started
                cpu = cpu_seconds(hub.process.pid)
                handed_in = sum((hub.handin / user / "00_welcome.ipynb").exists() for user in users)
            finally:
                sampler.stopped.set()
                hub.stop()
                if log is not None:
                    log.write_text(hub.log_tail(10_000_000))
    times = [o.verdict_s for o in outcomes if o.verdict_s is not None]
    return {
        "users": n_users, "os_users": missing is None, "wall_s": round(wall, 1),
        "verdict_p50_s": round(percentile(times, 50), 1) if times else None,
        "verdict_p95_s": round(percentile(times, 95), 1) if times else None,
        "verdict_max_s": round(max(times), 1) if times else None,
        "failed": {o.user: o.failed for o in outcomes if o.failed}, "handed_in": handed_in,
        "hub_peak_rss_mib": round(sampler.hub_peak), "student_peak_rss_mib_max": round(max(sampler.user_peak.values())),
        "student_peak_rss_mib_median": round(statistics.median(sampler.user_peak.values())),
        "cpu_s": round(cpu, 1), "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "slowest_steps": max(outcomes, key=lambda o: o.verdict_s or float("inf")).steps,
    }


async def _class(hub, users: list[str], cells: list[str]) -> list[Outcome]:
    async def bounded(user: str) -> Outcome:
        try:
            return await asyncio.wait_for(student(hub, user, cells), STUDENT_SECONDS)
        except Exception as error:  # noqa: BLE001 (a timeout or a refused connection is one student's failure)
            return Outcome(user, failed=f"{type(error).__name__}: {error}"[:300])

    return list(await asyncio.gather(*(bounded(user) for user in users)))


def row(result: dict) -> str:
    load = " / ".join(f"{b} → {a}" for b, a in zip(result["load_before"], result["load_after"]))
    cells = ["users", "verdict_p50_s", "verdict_p95_s", "verdict_max_s"]
    shown = [result[key] for key in cells] + [len(result["failed"]), result["handed_in"], result["hub_peak_rss_mib"],
                                             f"{result['student_peak_rss_mib_median']} / "
                                             f"{result['student_peak_rss_mib_max']}",
                                             result["cpu_s"], result["wall_s"], load]
    return "| " + " | ".join(str(cell) for cell in shown) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[5, 10, 20])
    parser.add_argument("--json", type=Path, help="also write every result here")
    parser.add_argument("--logs", type=Path, help="write the hub's log for each N into this folder")
    args = parser.parse_args()
    if any(n < 1 or n > 100 for n in args.users):
        parser.error(f"--users must be between 1 and 100, got {args.users}")
    print("| N | p50 s | p95 s | max s | failed | handed in | hub peak MiB | student peak MiB (median / max) | CPU-s "
          "| wall s | load 1/5/15 min (before → after) |\n|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    results = []
    for n_users in args.users:
        log = None if args.logs is None else args.logs / f"hub_{n_users}.log"
        results.append(measure(n_users, log))
        print(row(results[-1]), flush=True)
        if results[-1]["failed"]:
            print(json.dumps(results[-1]["failed"], indent=1), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
