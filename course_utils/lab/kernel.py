"""A submission's kernel: start it sandboxed, run every cell, then answer the grader's probes.

``SubmissionKernel`` starts a fresh kernel (``course_utils.lab.boot``) inside a ``sandbox.Jail``
(bubblewrap, its own uid and cgroup; the kernel protocol runs over unix sockets in the jail's
socket folder, since the kernel has no network), or, with ``Limits(sandbox=False)``, as a plain
process in an empty temporary folder. It runs every code cell through nbclient with a per-cell
timeout (a cell that raises does not stop later cells) inside a total time budget for the whole
submission (``total_timeout``), keeps at most ``output_bytes`` characters of each cell's output
and ``output_total_bytes`` of the whole submission's (error messages and tracebacks included), and records
per cell what went wrong. ``send(code, expression)`` then runs a probe and returns the value of
``expression`` as text, with its own timeout; a kernel that ignores the interrupt is killed.

Leaves out: what the probe code says (``probe.py``) and any judging (``grade.py``).
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from queue import Empty

import nbformat
import zmq
import zmq.asyncio
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from course_utils.lab.sandbox import WORKDIR, Jail, kernel_environment, launcher_environment

KERNEL_NAME = "course-lab-sandbox"
MAX_MESSAGE_BYTES = 96 << 20  # the largest message the grader accepts from a kernel
GRACE_S = 5.0  # how long an interrupted cell or probe gets to stop before the kernel is killed


@dataclass(frozen=True)
class Limits:
    """Per-submission limits: ``Limits(cell_timeout=60, probe_timeout=10, memory_mb=4096)``."""

    cell_timeout: float = 60.0
    probe_timeout: float = 10.0
    memory_mb: int = 4096
    output_bytes: int = 10_000  # characters of output kept per cell (errors and tracebacks included)
    output_total_bytes: int = 100_000  # ... and for the whole submission
    threads: int = 1
    total_timeout: float = 0.0  # seconds for the whole submission; 0 = 10 x cell_timeout
    processes: int = 64  # processes and threads of the submission together
    sandbox: bool = True

    def total(self) -> float:
        return self.total_timeout if self.total_timeout > 0 else 10 * self.cell_timeout

    def for_notebook(self, cell_seconds: float) -> Limits:
        """These limits for a course notebook whose longest cell needs ``cell_seconds`` (its metadata's
        ``grading_cell_timeout_s``, e.g. notebook 09's training): the cell limit rises to it and the total
        grows by it. ``Limits(cell_timeout=120).for_notebook(420)`` -> cell 420 s, total 1,620 s."""
        if cell_seconds <= self.cell_timeout:
            return self
        return replace(self, cell_timeout=float(cell_seconds), total_timeout=self.total() + cell_seconds)


@dataclass
class CellProblem:
    """Something that went wrong in one cell, for the feedback file."""

    index: int
    kind: str  # "error", "timeout", "total_timeout", "output_truncated", "kernel_died"
    detail: str


class KernelDied(BaseException):
    """The student's kernel is gone (exited, killed, or killed by us after ignoring an interrupt)."""


class ProbeTimeout(BaseException):
    """A probe ran past its limit and was interrupted; the kernel is still usable."""


class _SandboxSpecs(KernelSpecManager):
    argv: list[str] = []
    interrupt_mode = "signal"

    def find_kernel_specs(self) -> dict[str, str]:
        return {KERNEL_NAME: ""}

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(
            argv=list(self.argv),
            display_name="course-lab sandbox",
            language="python",
            interrupt_mode=self.interrupt_mode,
        )


class _CappedClient(NotebookClient):
    """nbclient, but keeping at most ``cap`` characters of output per cell and ``total`` for the whole
    submission: printed text, error messages and tracebacks alike (the rest is counted). Of an error
    that does not fit, the exception's name (at most ``NAME_CHARS``) is always kept, then as much of
    the message and of the traceback's last lines as there is room for. Rich output (figures, widgets,
    HTML, a cell's value) is never kept: the grader reads none of it, so it costs no room and no note."""

    NAME_CHARS = 100

    def __init__(self, nb, km, cap: int, total: int | None = None, **kw):
        super().__init__(nb, km=km, **kw)
        self.cap, self.total = cap, cap * 10 if total is None else total
        self.kept, self.dropped, self.kept_total = {}, {}, 0
        self.errors: dict[int, tuple[str, str]] = {}  # cell -> (name, first 300 characters of the message)

    def output(self, outs, msg, display_id, cell_index):
        content = msg["content"]
        if msg["msg_type"] == "stream":
            size = len(content.get("text", ""))
        elif msg["msg_type"] == "error":
            content["ename"] = str(content.get("ename", ""))[: self.NAME_CHARS]
            self.errors.setdefault(cell_index, (content["ename"], str(content.get("evalue", ""))[:300]))
            size = sum(len(str(line)) for line in content.get("traceback", [])) + len(str(content.get("evalue", "")))
        else:
            return None
        room = max(0, min(self.cap - self.kept.get(cell_index, 0), self.total - self.kept_total))
        if size > room:
            self.dropped[cell_index] = self.dropped.get(cell_index, 0) + size - room
            if msg["msg_type"] == "error":  # kept, cut to the room left: its name says what went wrong
                size = _cut_error(content, room)
            elif room > 0:
                content["text"] = content["text"][:room]
                size = room
            else:
                return None
        self.kept[cell_index] = self.kept.get(cell_index, 0) + size
        self.kept_total += size
        return super().output(outs, msg, display_id, cell_index)


def _cut_error(content: dict, room: int) -> int:
    """Cut an error's message and traceback to ``room`` characters together (the message first, then
    the traceback's last lines); returns the characters kept."""
    evalue = str(content.get("evalue", ""))[:room]
    left = room - len(evalue)
    kept = []
    for line in reversed([str(line) for line in content.get("traceback", [])]):
        if left <= 0:
            break
        kept.append(line[-left:])
        left -= len(kept[-1])
    content["evalue"], content["traceback"] = evalue, kept[::-1]
    return room - left


def _first_error(cell) -> tuple[str, str] | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return out.get("ename", ""), out.get("evalue", "")
    return None


class SubmissionKernel:
    """``async with SubmissionKernel(limits) as k: problems = await k.run_notebook(nb)``."""

    def __init__(self, limits: Limits, secrets: list[str] = ()):
        self.limits = limits
        self.deadline = time.monotonic() + limits.total()
        inner = [sys.executable, "-m", "course_utils.lab.boot", "--memory-mb", str(limits.memory_mb)]
        specs = _SandboxSpecs()
        self.jail = None
        if limits.sandbox:
            self.jail = Jail(limits.memory_mb, limits.processes, secrets)
            self.workdir = None
            env = kernel_environment(WORKDIR, "/tmp", limits)
            specs.argv = self.jail.command(
                [*inner, "--processes", str(limits.processes), "-f", "{connection_file}"], env
            )
            specs.interrupt_mode = "message"  # the kernel is in its own session: no signal reaches it
            self.km = AsyncKernelManager(
                kernel_name=KERNEL_NAME,
                kernel_spec_manager=specs,
                transport="ipc",
                ip=os.path.join(self.jail.sockets, "k"),
                connection_file=os.path.join(self.jail.sockets, "kernel.json"),
            )
            self.env = {}
        else:
            self.workdir = tempfile.mkdtemp(prefix="course-lab-")
            specs.argv = [*inner, "-f", "{connection_file}"]
            self.km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
            self.env = kernel_environment(self.workdir, self.workdir, limits)
        self.kc = None
        self.context = None
        self.dead = False

    async def __aenter__(self) -> "SubmissionKernel":
        try:
            if self.jail is not None:
                self.km.write_connection_file()
                os.chmod(
                    self.km.connection_file, 0o644
                )  # the kernel's uid must read it; it holds only this kernel's key
            await self.km.start_kernel(
                cwd=self.workdir or self.jail.sockets,
                env=self.env or launcher_environment(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
            )
            self.context = zmq.asyncio.Context()
            self.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)  # a bigger message drops the connection
            self.kc = self.km.client(context=self.context)
            self.kc.start_channels()
            await self.kc.wait_for_ready(timeout=180)
        except BaseException:
            await self.__aexit__()
            raise
        if self.jail is not None:
            self.jail.seal()
        self.deadline = time.monotonic() + self.limits.total()
        return self

    def remaining(self) -> float:
        """Seconds left of the submission's total time budget."""
        return self.deadline - time.monotonic()

    async def __aexit__(self, *exc) -> None:
        try:
            if self.kc is not None:
                self.kc.stop_channels()
            if self.context is not None:
                self.context.destroy(linger=0)
            if self.km.has_kernel:
                await self.km.shutdown_kernel(now=True)
        except Exception:
            pass
        finally:
            if self.workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            if self.jail is not None:
                self.jail.close()

    async def kill(self) -> None:
        self.dead = True
        try:
            await self.km.kill_kernel()
        except Exception:
            pass

    async def run_notebook(self, nb: nbformat.NotebookNode, watch: list[str] = ()) -> list[CellProblem]:
        """Run every code cell in order; return what went wrong. ``self.dead`` is set if the kernel died.

        After each cell that defines (``def``/``class`` at top level) a name in ``watch``, the
        kernel remembers that definition (``kernel_code.snapshot_code``)."""
        from course_utils.lab.kernel_code import snapshot_code

        defines = {
            name: re.compile(rf"^(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", re.MULTILINE) for name in watch
        }
        client = _CappedClient(
            nb,
            self.km,
            self.limits.output_bytes,
            self.limits.output_total_bytes,
            timeout=self.limits.cell_timeout,
            allow_errors=True,
            interrupt_on_timeout=True,
            record_timing=False,
            kernel_name=KERNEL_NAME,
        )
        client.kc = self.kc
        problems: list[CellProblem] = []
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            start, limit = time.monotonic(), min(self.limits.cell_timeout, self.remaining())
            if limit <= 0:
                problems.append(
                    CellProblem(
                        index,
                        "total_timeout",
                        f"not run: the submission's {self.limits.total():g} s total time limit was reached",
                    )
                )
                break
            client.timeout = max(1, math.ceil(limit))  # nbclient wants whole seconds
            try:
                await asyncio.wait_for(client.async_execute_cell(cell, index, store_history=False), limit + GRACE_S)
            except (DeadKernelError, asyncio.TimeoutError):
                # nbclient reports our own cancellation (a cell that ignored the interrupt) as a dead kernel
                if await self.km.is_alive():
                    detail = f"ran past {self.limits.cell_timeout:g} s and ignored the interrupt; kernel stopped"
                else:
                    detail = "the kernel died while running this cell"
                await self.kill()
                problems.append(CellProblem(index, "kernel_died", detail))
            else:
                error = client.errors.get(index) or _first_error(cell)
                took = time.monotonic() - start
                if error and error[0] == "KeyboardInterrupt" and took >= limit and limit < self.limits.cell_timeout:
                    problems.append(
                        CellProblem(
                            index,
                            "total_timeout",
                            f"stopped: the submission's {self.limits.total():g} s total time limit was reached",
                        )
                    )
                elif error and error[0] == "KeyboardInterrupt" and took >= limit:
                    problems.append(
                        CellProblem(
                            index, "timeout", f"stopped after the {self.limits.cell_timeout:g} s cell time limit"
                        )
                    )
                elif error:
                    problems.append(CellProblem(index, "error", f"{error[0]}: {error[1]}"[:300]))
            if index in client.dropped:
                kept = client.kept.get(index, 0)
                problems.append(
                    CellProblem(
                        index,
                        "output_truncated",
                        f"printed {client.dropped[index] + kept:,} characters; kept the first {kept:,} "
                        f"(at most {self.limits.output_bytes:,} per cell and "
                        f"{self.limits.output_total_bytes:,} per submission, errors included)",
                    )
                )
            if self.dead or not await self.km.is_alive():
                self.dead = True
                if not problems or problems[-1].kind != "kernel_died":
                    problems.append(CellProblem(index, "kernel_died", "the kernel exited while running this cell"))
                break
            defined = [name for name, pattern in defines.items() if pattern.search(cell.source)]
            if defined:
                await self._quietly(snapshot_code(defined, overwrite=True))
        if watch and not self.dead:
            await self._quietly(snapshot_code(list(watch), overwrite=False))
        return problems

    async def _quietly(self, code: str) -> None:
        try:
            await self.send(code, "None")
        except (ProbeTimeout, KernelDied):
            pass

    async def send(self, code: str, expression: str) -> tuple[str, str]:
        """Run ``code`` silently, then evaluate ``expression``: ('ok', its repr) or ('error', 'Name: msg').

        Raises ``ProbeTimeout`` (kernel interrupted, still usable) or ``KernelDied``."""
        if self.dead or not await self.km.is_alive():
            self.dead = True
            raise KernelDied("the kernel is not running")
        limit = min(self.limits.probe_timeout, self.remaining())
        if limit <= 0:
            raise ProbeTimeout(
                f"was not called: the submission's {self.limits.total():g} s total time limit was reached"
            )
        msg_id = self.kc.execute(
            code, silent=True, store_history=False, user_expressions={"r": expression}, stop_on_error=False
        )
        reply = await self._reply(msg_id, limit)
        if reply is None:
            await self.km.interrupt_kernel()
            reply = await self._reply(msg_id, GRACE_S)
            if reply is None:
                await self.kill()
                raise KernelDied(f"a call ran past {limit:g} s and ignored the interrupt; kernel stopped")
            if limit < self.limits.probe_timeout:
                raise ProbeTimeout(f"ran into the submission's {self.limits.total():g} s total time limit")
            raise ProbeTimeout(f"ran past the {self.limits.probe_timeout:g} s time limit")
        content = reply["content"]
        if content.get("status") != "ok":
            return "error", f"{content.get('ename', '?')}: {content.get('evalue', '')}"
        value = content.get("user_expressions", {}).get("r", {})
        if value.get("status") != "ok":
            return "error", f"{value.get('ename', '?')}: {value.get('evalue', '')}"
        return "ok", value.get("data", {}).get("text/plain", "")

    async def _reply(self, msg_id: str, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            await self._drain_iopub()
            try:
                msg = await self.kc.get_shell_msg(timeout=min(0.25, max(deadline - time.monotonic(), 0.01)))
            except Empty:
                if not await self.km.is_alive():
                    self.dead = True
                    raise KernelDied("the kernel died during a call") from None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg
        return None

    async def _drain_iopub(self) -> None:
        while True:
            try:
                await self.kc.get_iopub_msg(timeout=0)
            except Empty:
                return
