"""A submission's kernel: start it sandboxed, run its cells, then answer the grader's probes.

``SubmissionKernel`` starts a fresh kernel (``course_utils.lab.grading.boot``) inside a ``sandbox.Jail``
(bubblewrap, its own uid and cgroup; the kernel protocol runs over unix sockets in the jail's
socket folder, since the kernel has no network), or, with ``Limits(sandbox=False)``, as a plain
process in an empty temporary folder. The grader runs the notebook's cells in it (``cells.run_cells``),
which then calls ``stop_listening``. ``send(code, expression)`` then runs a probe and returns the value of
``expression`` as text, with its own timeout; a kernel that ignores the interrupt is killed.
The kernel's output is bounded in bytes (``limits.MAX_OUTPUT_MESSAGE_BYTES`` a message,
``OUTPUT_QUEUE_MESSAGES`` queued), no longer read once the cells have run, and in time by a watchdog
thread that kills a kernel still running past the submission's total time (plus grace periods).

Leaves out: running the cells (``cells.py``), what the probe code says (``kernel_code.py``,
``probe.py``) and any judging (``grade.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from queue import Empty

import zmq
import zmq.asyncio
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from nbclient.exceptions import DeadKernelError

from course_utils.lab.grading.bounded import loads_bounded
from course_utils.lab.grading.cgroups import kill_cgroup
from course_utils.lab.limits import (
    GRACE_S,
    KERNEL_START_S,
    MAX_JSON_DEPTH,
    MAX_MESSAGE_BYTES,
    MAX_OUTPUT_MESSAGE_BYTES,
    OUTPUT_QUEUE_MESSAGES,
    Limits,
)
from course_utils.lab.grading.pool import kill_tree
from course_utils.lab.grading.probe import ProbeFailed
from course_utils.lab.grading.sandbox import WORKDIR, Jail, kernel_environment, launcher_environment
from course_utils.env.notebook_run import SlicedKernelManager

KERNEL_NAME = "course-lab-sandbox"


class KernelDied(BaseException):
    """The student's kernel is gone (exited, killed, or killed by us after ignoring an interrupt)."""


class ProbeTimeout(BaseException):
    """A probe ran past its limit and was interrupted; the kernel is still usable."""


class UnreadableMessage(DeadKernelError):
    """The kernel sent a protocol message the grader refuses to read (JSON nested more than
    ``MAX_JSON_DEPTH`` levels, or no JSON): the kernel is stopped. A ``DeadKernelError``, so a cell
    that gets one ends as a dead kernel; a probe that gets one fails with this message."""


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


class SubmissionKernel:
    """``async with SubmissionKernel(limits) as k: problems = await cells.run_cells(k, nb)``."""

    def __init__(self, limits: Limits, secrets: list[str] = ()):
        self.limits = limits
        self.deadline = time.monotonic() + limits.total()
        inner = [sys.executable, "-m", "course_utils.lab.grading.boot", "--memory-mb", str(limits.memory_mb)]
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
            self.km = SlicedKernelManager(
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
            self.km = SlicedKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
            self.env = kernel_environment(self.workdir, self.workdir, limits)
        self.kc = None
        self.context = None
        self.dead = False
        self.watchdog: threading.Timer | None = None
        self.listening = True  # to the kernel's output (iopub); closed once the cells have run

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
            self.kc = self.km.client(context=self.context)
            self.kc.session.unpack = self._unpack  # every message the kernel sends is read at a bounded depth
            # Output (iopub): a few messages of at most 16 MiB queued here, the rest dropped by the kernel's
            # side; then the shell channel, whose probe replies may be larger. A bigger message drops the
            # connection.
            self.context.setsockopt(zmq.RCVHWM, OUTPUT_QUEUE_MESSAGES)
            self.context.setsockopt(zmq.MAXMSGSIZE, MAX_OUTPUT_MESSAGE_BYTES)
            self.kc.iopub_channel  # noqa: B018 (made now, with the output limits)
            self.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
            self.kc.start_channels()
            await self.kc.wait_for_ready(timeout=KERNEL_START_S)
        except BaseException:
            await self.__aexit__()
            raise
        if self.jail is not None:
            self.jail.seal()
        self.deadline = time.monotonic() + self.limits.total()
        # A watchdog outside the event loop: a kernel still running 3 grace periods past the total time
        # is killed, even while the loop is kept busy by output from a thread of the kernel's.
        self.watchdog = threading.Timer(self.limits.total() + 3 * GRACE_S, self._stop_hard)
        self.watchdog.daemon = True
        self.watchdog.start()
        return self

    def _unpack(self, data: bytes):
        try:
            return loads_bounded(bytes(data).decode("utf8", errors="replace"), MAX_JSON_DEPTH)
        except ValueError as exc:
            self._stop_hard()
            raise UnreadableMessage(
                f"the kernel sent a message the grader cannot read ({exc}); kernel stopped"
            ) from None

    def _stop_hard(self) -> None:
        """Kill the kernel from any thread: its process tree, and every process in its cgroup."""
        self.dead = True
        process = getattr(self.km.provisioner, "process", None) if self.km.has_kernel else None
        if process is not None:
            kill_tree(process.pid)
            try:
                process.wait(timeout=GRACE_S)  # reaped: the kernel reads as dead from here on
            except subprocess.TimeoutExpired:
                pass
        for group in self.jail.groups if self.jail is not None else ():
            kill_cgroup(group)

    def remaining(self) -> float:
        """Seconds left of the submission's total time budget."""
        return self.deadline - time.monotonic()

    async def __aexit__(self, *exc) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
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

    def stop_listening(self) -> None:
        """Stop reading the kernel's output (iopub) for good: probes read only the shell channel."""
        self.listening = False
        if self.kc is not None:
            self.kc.iopub_channel.close()

    async def send_quietly(self, code: str) -> None:
        """``send(code, "None")``, where a timeout or a dead kernel is not the caller's concern."""
        try:
            await self.send(code, "None")
        except (ProbeTimeout, KernelDied, ProbeFailed):
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
            except UnreadableMessage as exc:
                raise ProbeFailed(str(exc)) from None
            except Empty:
                if not await self.km.is_alive():
                    self.dead = True
                    raise KernelDied("the kernel died during a call") from None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg
        return None

    async def _drain_iopub(self) -> None:
        """Drop the output queued so far (at most a queue's worth, so a kernel that keeps writing cannot
        hold the caller here)."""
        for _ in range(OUTPUT_QUEUE_MESSAGES + 1 if self.listening else 0):
            try:
                await self.kc.get_iopub_msg(timeout=0)
            except Empty:
                return
