"""What runs first inside a submission's sandbox: per-process limits, then an ordinary IPython kernel.

``python -m course_utils.lab.grading.boot --memory-mb 2048 --processes 64 -f CONNECTION_FILE`` caps the
process's address space (``RLIMIT_AS``: an allocation far past the limit fails inside the student's
cell with ``MemoryError`` / ``RuntimeError`` instead of waking the out-of-memory killer), the number
of processes and threads of its uid (``RLIMIT_NPROC``), the size of any file it writes
(``RLIMIT_FSIZE``) and core dumps, asks Linux to kill it if the process that started it dies,
imports torch (outside any cell's time limit), then starts ipykernel.

The isolation itself (namespaces, read-only file system, the unprivileged uid, the cgroup that caps
all the submission's processes together) is set up before this runs (``sandbox.py``).
"""

from __future__ import annotations

import argparse
import resource
import sys

FILE_BYTES = 64 << 20  # the largest file a submission may write (its working folder is a small tmpfs)


def _cap(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def limit_memory(megabytes: int) -> None:
    """Cap this process's address space: ``limit_memory(2048)`` -> allocations past ~2 GiB fail.

    The data limit a grading worker set on itself (``cap_own_data``) is lifted again: this limit is the one."""
    if megabytes <= 0:
        raise ValueError(f"memory_mb must be positive, got {megabytes}")
    _cap(resource.RLIMIT_AS, megabytes << 20)
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    resource.setrlimit(resource.RLIMIT_DATA, (hard, hard))


def cap_own_data(megabytes: int) -> None:
    """A soft cap on this process's data (heap and private writable mappings, ``RLIMIT_DATA``): an
    allocation past it fails (``MemoryError``, torch's ``RuntimeError``) instead of taking the machine's
    memory. Soft only, so the kernels it starts may lift it (``limit_memory``). ``cap_own_data(4096)``."""
    if megabytes <= 0:
        raise ValueError(f"megabytes must be positive, got {megabytes}")
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    value = megabytes << 20
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (value, hard))


def limit_processes(count: int) -> None:
    """Cap the processes and threads of this uid: ``limit_processes(64)`` -> the 65th ``fork`` fails."""
    if count <= 0:
        raise ValueError(f"processes must be positive, got {count}")
    _cap(resource.RLIMIT_NPROC, count)
    _cap(resource.RLIMIT_FSIZE, FILE_BYTES)
    _cap(resource.RLIMIT_CORE, 0)


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
    parser = argparse.ArgumentParser(prog="course_utils.lab.grading.boot")
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--processes", type=int, default=0)
    args, kernel_args = parser.parse_known_args(argv)
    limit_memory(args.memory_mb)
    if args.processes:
        limit_processes(args.processes)
    die_with_parent()
    preload()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance(argv=kernel_args)


if __name__ == "__main__":
    main(sys.argv[1:])
