"""Every status a submission or an exercise row can have, in one place.

``Status`` is a ``str`` enum: ``Status.TIMEOUT == "timeout"`` (and hashes alike), and it is written to the CSV, the
journal and job results as its plain value, so results read back from JSON (plain strings) compare
equal to it.

Per exercise: ``ok`` (graded: passed or failed; the feedback says which), ``not_attempted`` (the
function still raises the release's ``NotImplementedError``), ``not_defined``, ``uses_reference``,
``timeout`` (a graded call ran out of time), ``kernel_died``, ``probe_failed``, ``grader_error``; a
row for a whole file that could not be graded: ``unreadable``, ``link``, ``unknown_notebook``; and,
in the gradebook, ``missing`` (a notebook of the assignment not handed in). Per submission: ``ok``,
``kernel_died``, ``total_timeout`` (the submission's total time ran out), ``cell_timeout`` (a cell
ran past its limit), ``timeout`` (only graded calls did), ``grader_error``, ``unreadable``,
``link``, ``unknown_notebook``.

Leaves out: which happens when (``grade.py``, ``folder.py``, ``worker.py``).
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    OK = "ok"
    NOT_ATTEMPTED = "not_attempted"
    NOT_DEFINED = "not_defined"
    USES_REFERENCE = "uses_reference"
    TIMEOUT = "timeout"
    CELL_TIMEOUT = "cell_timeout"
    TOTAL_TIMEOUT = "total_timeout"
    KERNEL_DIED = "kernel_died"
    PROBE_FAILED = "probe_failed"
    GRADER_ERROR = "grader_error"
    UNREADABLE = "unreadable"
    LINK = "link"
    UNKNOWN_NOTEBOOK = "unknown_notebook"
    MISSING = "missing"

    def __str__(self) -> str:
        return self.value

    def __hash__(self) -> int:  # as its value's, so sets and dicts mix members and plain strings
        return hash(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
