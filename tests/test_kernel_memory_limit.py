"""The memory ceiling of a student's kernel (issue #41.3): deploy/jupyter/kernels/python3, the kernel spec the
hub's config puts first on JUPYTER_PATH, caps each kernel's address space at COURSE_KERNEL_MEMORY_MB.

A kernel started from that spec (as a student's server starts it) with a 2.5 GiB ceiling: an allocation past it (torch
and numpy, the two ways the course's notebooks allocate) fails in that cell with the error and a note naming the
limit; the kernel keeps running with the student's variables, and an allocation under the limit still works. Other
errors show without the note, and without COURSE_KERNEL_MEMORY_MB the kernel has no ceiling.
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # a kernel importing torch: ~3 CPU-s

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "deploy" / "jupyter" / "kernels"
LIMIT_MB = 2560  # a kernel with torch imported maps ~1.4 GiB of address space
NOTE = f"Out of memory: this kernel may use at most {LIMIT_MB} MiB"


def _kernel(limit_mb: str | None):
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    env = {k: v for k, v in os.environ.items() if k != "COURSE_KERNEL_MEMORY_MB"}
    if limit_mb is not None:
        env["COURSE_KERNEL_MEMORY_MB"] = limit_mb
    manager = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(KERNELS)]))
    manager.start_kernel(env=env)
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=240)
    return manager, client


def _run(client, code: str) -> tuple[str, str]:
    """(status, all it printed, returned or raised) of ``code``."""
    shown = []

    def collect(msg):
        content = msg["content"]
        if msg["msg_type"] == "stream":
            shown.append(content["text"])
        elif msg["msg_type"] == "execute_result":
            shown.append(content["data"]["text/plain"])
        elif msg["msg_type"] == "error":
            shown.append("\n".join(content["traceback"]))

    reply = client.execute_interactive(code, output_hook=collect, timeout=240)
    return reply["content"]["status"], "".join(shown)


@pytest.fixture(scope="module")
def limited():
    manager, client = _kernel(str(LIMIT_MB))
    yield manager, client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def test_the_kernel_runs_under_the_limit_set_for_it(limited):
    manager, _ = limited
    soft, hard = psutil.Process(manager.provisioner.pid).rlimit(psutil.RLIMIT_AS)
    assert soft == hard == LIMIT_MB * 2**20


@pytest.mark.parametrize("allocation", [
    "torch.ones(2**32, dtype=torch.uint8)",  # 4 GiB
    "numpy.ones(2**32, dtype=numpy.uint8)",
])
def test_an_allocation_past_the_limit_fails_in_its_cell_with_a_note_and_the_kernel_lives_on(limited, allocation):
    manager, client = limited
    pid = manager.provisioner.pid
    assert _run(client, "import numpy, torch\nmy_work = {'answer': 42}") == ("ok", "")
    status, shown = _run(client, f"big = {allocation}")
    assert status == "error" and NOTE in shown, shown
    assert "Kernel > Restart" in shown and "notebook is unchanged" in shown
    assert manager.is_alive() and manager.provisioner.pid == pid  # not restarted: the same process
    assert _run(client, "my_work['answer']") == ("ok", "42")
    assert _run(client, "len(torch.ones(2**26, dtype=torch.uint8))") == ("ok", str(2**26))  # 64 MiB still fine


def test_other_errors_show_without_the_note(limited):
    _, client = limited
    for code in ("1 / 0", "raise RuntimeError('shapes do not match')"):
        status, shown = _run(client, code)
        assert status == "error" and NOTE not in shown and ("ZeroDivisionError" in shown or "shapes" in shown)


def test_without_a_limit_set_the_kernel_has_no_ceiling():
    manager, client = _kernel(None)
    try:
        soft, _ = psutil.Process(manager.provisioner.pid).rlimit(psutil.RLIMIT_AS)
        assert soft == psutil.RLIM_INFINITY
        assert _run(client, "1 + 1") == ("ok", "2")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
