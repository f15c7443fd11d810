"""Every bound the grader works under, with its default: per submission (``Limits``) and fixed ones.

``Limits`` travels in each job file (``folder.make_job``) to the worker that grades it; its defaults
are the ``course-lab grade`` defaults (``cli.py`` reads them from here). ``GRACE_S`` is how long an
interrupted cell or probe gets before its kernel is killed; ``job_budget(limits)`` is how long the
grader waits for a worker's result. The fixed bounds below keep a hostile submission from costing
the grader more than they allow: its file (size, JSON depth), its answers (bytes, items, depth,
archive), the kernel's messages, and the worker's own memory.

Leaves out: enforcing them (``kernel.py``, ``cells.py``, ``sandbox.py``, ``boot.py``, ``answers.py``,
``submissions.py``, ``worker.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

GRACE_S = 5.0  # how long an interrupted cell or probe gets to stop before the kernel is killed
KERNEL_START_S = 180.0  # the most a kernel may take to start, on top of a submission's total time

# A submitted file: read at most this many bytes, and refuse JSON nested deeper than this before
# parsing it (a notebook is about 6 levels deep; Python's parser overflows its stack near 1,000).
MAX_NOTEBOOK_BYTES = 50 << 20
MAX_JSON_DEPTH = 100

# One answer brought back from a kernel: tensor data (counted from shape x dtype, in the kernel and
# in the grader), containers and scalars visited (counted along every path: a graph of shared lists
# counts as the tree it unfolds to), nesting depth, the characters of the reply and the bytes its
# torch archive may hold once read (every record stored, none compressed).
MAX_VALUE_BYTES = 32 << 20
MAX_VALUE_ITEMS = 100_000  # the largest course answer has 361 (byte_bpe_train's merges)
MAX_VALUE_DEPTH = 100
MAX_REPLY_CHARS = 64 << 20
MAX_ARCHIVE_BYTES = MAX_VALUE_BYTES + (16 << 20)  # tensors + the pickle of the containers around them

# Messages from a kernel: the largest one (a probe's reply on the shell channel), the largest output
# message, and how many output messages the grader's socket holds before it drops more.
MAX_MESSAGE_BYTES = 96 << 20
MAX_OUTPUT_MESSAGE_BYTES = 16 << 20
OUTPUT_QUEUE_MESSAGES = 8

# The grading worker's own address space (soft RLIMIT_AS, which its kernels may raise to theirs):
# torch, the client and one answer take about 1 GiB of it.
WORKER_MEMORY_MB = 4096


@dataclass(frozen=True)
class Limits:
    """Per-submission limits: ``Limits(cell_timeout=60, probe_timeout=10, memory_mb=4096)``."""

    cell_timeout: float = 120.0
    probe_timeout: float = 20.0
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
        ``grading_cell_timeout_s``, e.g. notebook 10's training): the cell limit rises to it and the total
        grows by it. ``Limits(cell_timeout=120).for_notebook(420)`` -> cell 420 s, total 1,620 s."""
        if cell_seconds <= self.cell_timeout:
            return self
        return replace(self, cell_timeout=float(cell_seconds), total_timeout=self.total() + cell_seconds)


DEFAULTS = {f.name: f.default for f in fields(Limits)}  # the CLI's defaults: DEFAULTS["cell_timeout"] -> 120.0


def job_budget(limits: Limits) -> float:
    """The most a worker may take for one submission: its kernel's start, its total time, and the grace
    periods. ``job_budget(Limits(cell_timeout=60))`` -> 180 + 600 + 20 = 800 s."""
    return KERNEL_START_S + limits.total() + 4 * GRACE_S
