"""The kernel the grader starts for a submission: an ordinary IPython kernel under a memory limit.

``python -m course_utils.lab.sandbox --memory-mb 2048 -f CONNECTION_FILE`` caps the process's
address space (``RLIMIT_AS``), so an allocation far past the limit fails inside the student's cell
(``MemoryError`` / ``RuntimeError``) instead of taking the machine down, then starts ipykernel.

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="course_utils.lab.sandbox")
    parser.add_argument("--memory-mb", type=int, required=True)
    args, kernel_args = parser.parse_known_args(argv)
    limit_memory(args.memory_mb)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance(argv=kernel_args)


if __name__ == "__main__":
    main(sys.argv[1:])
