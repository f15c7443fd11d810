"""How many CPU threads torch uses: pinning the count for a block, and choosing it for a training run.

Covers ``torch_threads(n)``, a context manager that runs its block on ``n`` intra-op threads and
puts the previous count back afterwards, also when the block raises (``None`` leaves the count as
it is); and ``threads_for_load``, the count to train with on a machine that may already be busy.
The course's toy models, its timings and its small training runs pin one thread: their tensors are
too small to gain from more, and on a crowded machine idle threads spinning cost more than the
maths (a toy training step took ~18x the CPU time with several threads).
Leaves out inter-op threads (``torch.set_num_interop_threads`` can be set only once per process)
and choosing a device (``course_utils.env.device``).
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

import torch

from course_utils.validate import positive_int


@contextlib.contextmanager
def torch_threads(n: int | None, *, name: str = "n") -> Iterator[None]:
    """Run the block on ``n`` torch CPU threads, then restore the count it had before.

    ``with torch_threads(1): train()`` trains on one thread; afterwards ``torch.get_num_threads()``
    is what it was, whether ``train()`` returned or raised. ``n=None`` changes nothing inside the
    block (for callers whose thread count is optional). ``n`` must be a positive int: ``0``, ``-1``
    raise ValueError, ``2.0`` or ``True`` TypeError, each naming ``name``.
    """
    if n is not None:
        positive_int(name, n)
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def threads_for_load(load: float | None = None, cores: int | None = None) -> int:
    """How many CPU threads to train with: 1 when the machine is already busier than its cores, else all,
    and never more than ``$OMP_NUM_THREADS`` when that is set (the user's or the test runner's limit).

    ``threads_for_load(9.0, 2)`` -> 1. On a crowded machine every extra thread waits for the others
    (a step took about ten times longer with 2 threads than with 1 at a load of 10 on 2 cores).
    """
    cores = (os.cpu_count() or 1) if cores is None else cores
    load = os.getloadavg()[0] if load is None else load
    threads = 1 if load > cores else cores
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    return min(threads, int(limit)) if limit.isdigit() and int(limit) > 0 else threads
