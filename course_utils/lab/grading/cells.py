"""Run a submission's code cells in its kernel, within the limits, and say what went wrong in each.

``run_cells(kernel, nb, watch)`` runs every code cell through nbclient with a per-cell timeout (a
cell that raises does not stop later cells) inside the submission's total time budget
(``Limits.total``), keeps at most ``output_bytes`` characters of each cell's output and
``output_total_bytes`` of the whole submission's (error messages and tracebacks included;
``_CappedClient``), and records per cell what went wrong (``CellProblem``). After each cell that
defines a watched name, the kernel remembers that definition (``kernel_code.snapshot_code``).

Leaves out: starting the kernel and sending probes (``kernel.py``, which never imports this module:
the grader hands the started kernel to ``run_cells``), and how a problem is told (``feedback.py``).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import time
from typing import TYPE_CHECKING

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from course_utils.lab.grading.kernel_code import snapshot_code
from course_utils.lab.limits import GRACE_S
from course_utils.lab.results import CellProblem

if TYPE_CHECKING:
    from course_utils.lab.grading.kernel import SubmissionKernel


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


def cell_digest(source: str) -> str:
    """sha256 of a cell's source without its surrounding blank space."""
    return hashlib.sha256(source.strip().encode("utf-8", "surrogatepass")).hexdigest()


def course_cells(nb: nbformat.NotebookNode, functions: frozenset) -> frozenset:
    """Digests of the course notebook's code cells that no student writes: every code cell that neither
    holds a solution region nor names one of the exercises' ``functions`` (a cell that calls the
    student's function can fail because of their answer)."""
    found = set()
    for cell in nb.cells:
        if cell.cell_type != "code" or "# BEGIN SOLUTION" in cell.source:
            continue
        if not any(re.search(rf"\b{re.escape(name)}\b", cell.source) for name in functions):
            found.add(cell_digest(cell.source))
    return frozenset(found)


def blame_course(problems: list[CellProblem], nb: nbformat.NotebookNode, course: frozenset) -> list[CellProblem]:
    """``problems`` with each error in a cell the student handed in exactly as the course wrote it
    (``course_cells``) marked ``course_error``: the course's fault, never charged to the student."""
    return [
        CellProblem(p.index, "course_error", p.detail)
        if p.kind == "error" and cell_digest(nb.cells[p.index].source) in course
        else p
        for p in problems
    ]


def _first_error(cell) -> tuple[str, str] | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return out.get("ename", ""), out.get("evalue", "")
    return None


async def run_cells(kernel: SubmissionKernel, nb: nbformat.NotebookNode, watch: list[str] = ()) -> list[CellProblem]:
    """Run every code cell in order; return what went wrong. ``kernel.dead`` is set if the kernel died.

    After each cell that defines (``def``/``class`` at top level) a name in ``watch``, the
    kernel remembers that definition (``kernel_code.snapshot_code``). Then the grader stops listening
    to the kernel's output (``SubmissionKernel.stop_listening``): nothing the kernel prints later (a
    thread that keeps writing, say) reaches the grader, whose probes read only the shell channel."""
    try:
        return await _run_cells(kernel, nb, watch)
    finally:
        kernel.stop_listening()


async def _run_cells(kernel: SubmissionKernel, nb: nbformat.NotebookNode, watch: list[str]) -> list[CellProblem]:
    defines = {name: re.compile(rf"^(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", re.MULTILINE) for name in watch}
    client = _CappedClient(
        nb,
        kernel.km,
        kernel.limits.output_bytes,
        kernel.limits.output_total_bytes,
        timeout=kernel.limits.cell_timeout,
        allow_errors=True,
        interrupt_on_timeout=True,
        record_timing=False,
        kernel_name=kernel.km.kernel_name,
    )
    client.kc = kernel.kc
    problems: list[CellProblem] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        start, limit = time.monotonic(), min(kernel.limits.cell_timeout, kernel.remaining())
        if limit <= 0:
            problems.append(
                CellProblem(
                    index,
                    "total_timeout",
                    f"not run: the submission's {kernel.limits.total():g} s total time limit was reached",
                )
            )
            break
        client.timeout = max(1, math.ceil(limit))  # nbclient wants whole seconds
        try:
            await asyncio.wait_for(client.async_execute_cell(cell, index, store_history=False), limit + GRACE_S)
        except (DeadKernelError, asyncio.TimeoutError):
            # nbclient reports our own cancellation (a cell that ignored the interrupt) as a dead kernel
            if await kernel.km.is_alive():
                detail = f"ran past {kernel.limits.cell_timeout:g} s and ignored the interrupt; kernel stopped"
            else:
                detail = "the kernel died while running this cell"
            await kernel.kill()
            problems.append(CellProblem(index, "kernel_died", detail))
        else:
            error = client.errors.get(index) or _first_error(cell)
            took = time.monotonic() - start
            if error and error[0] == "KeyboardInterrupt" and took >= limit and limit < kernel.limits.cell_timeout:
                problems.append(
                    CellProblem(
                        index,
                        "total_timeout",
                        f"stopped: the submission's {kernel.limits.total():g} s total time limit was reached",
                    )
                )
            elif error and error[0] == "KeyboardInterrupt" and took >= limit:
                problems.append(
                    CellProblem(index, "timeout", f"stopped after the {kernel.limits.cell_timeout:g} s cell time limit")
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
                    f"(at most {kernel.limits.output_bytes:,} per cell and "
                    f"{kernel.limits.output_total_bytes:,} per submission, errors included)",
                )
            )
        if kernel.dead or not await kernel.km.is_alive():
            kernel.dead = True
            if not problems or problems[-1].kind != "kernel_died":
                problems.append(CellProblem(index, "kernel_died", "the kernel exited while running this cell"))
            break
        defined = [name for name, pattern in defines.items() if pattern.search(cell.source)]
        if defined:
            await kernel.send_quietly(snapshot_code(defined, overwrite=True))
    if watch and not kernel.dead:
        await kernel.send_quietly(snapshot_code(list(watch), overwrite=False))
    return problems
