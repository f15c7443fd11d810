"""The kernel the grader starts for a submission: an ordinary IPython kernel under a memory limit.

``python -m course_utils.lab.sandbox --memory-mb 2048 -f CONNECTION_FILE`` caps the process's
address space (``RLIMIT_AS``), so an allocation far past the limit fails inside the student's cell
(``MemoryError`` / ``RuntimeError``) instead of taking the machine down, asks Linux to kill it if
the grading process that started it dies, imports torch (outside any cell's time limit), then
starts ipykernel.

Leaves out: file-system and network isolation. The kernel runs as the grader's user; for hostile
classes run the whole grader in a container or as a separate user.
"""

from __future__ import annotations

import argparse
import resource
import sys


def limit_memory(megabytes: int) -> None:
    """Cap this process's address space: ``limit_memory(2048)`` -> allocations past ~2 GiB fail."""
    if megabytes <= 0:
        raise ValueError(f"memory_mb must be positive, got {megabytes}")
    limit = megabytes << 20
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def die_with_parent() -> None:
    """On Linux, have this process killed when the process that started it dies (no orphan kernels)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def preload() -> None:
    """Import torch before the first cell, so its slow import never counts against a cell's time
    limit (an import interrupted half-way leaves torch unusable for the rest of the notebook)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="course_utils.lab.sandbox")
    parser.add_argument("--memory-mb", type=int, required=True)
    args, kernel_args = parser.parse_known_args(argv)
    limit_memory(args.memory_mb)
    die_with_parent()
    preload()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance(argv=kernel_args)


if __name__ == "__main__":
    main(sys.argv[1:])
