"""The bounds one submission is graded under: time per cell, per probe and in all, memory, output, processes.

``Limits`` travels in each job file (``folder.make_job``) to the worker that grades it; ``GRACE_S``
is how long an interrupted cell or probe gets before its kernel is killed; ``job_budget(limits)``
is how long the grader waits for a worker's result. The CLI's own defaults are in ``cli.py``.

Leaves out: enforcing them (``kernel.py``, ``cells.py``, ``sandbox.py``, ``boot.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

GRACE_S = 5.0  # how long an interrupted cell or probe gets to stop before the kernel is killed
KERNEL_START_S = 180.0  # the most a kernel may take to start, on top of a submission's total time


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


def job_budget(limits: Limits) -> float:
    """The most a worker may take for one submission: its kernel's start, its total time, and the grace
    periods. ``job_budget(Limits(cell_timeout=60))`` -> 180 + 600 + 20 = 800 s."""
    return KERNEL_START_S + limits.total() + 4 * GRACE_S
