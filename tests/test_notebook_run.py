"""notebook_run: a missed wake-up costs one slice, not the whole timeout; the client really uses the sliced channels."""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from queue import Empty

import nbformat
import pytest

from course_utils.env.notebook_run import CourseNotebookClient, SlicedChannel, SlicedKernelClient, sliced_get


def _run(coroutine):
    """``asyncio.run`` in a thread of its own: on a test worker that also drives the browser, Playwright's sync
    API keeps an event loop running in the main thread, where ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _missed_wakeup(arrives_after: float):
    """A channel wait as it behaves after a missed wake-up: it sleeps its whole wait, then finds the message
    if it has arrived by then (pyzmq's last real poll), else raises Empty."""
    start = time.monotonic()

    async def get_once(seconds: float):
        await asyncio.sleep(seconds)
        if time.monotonic() - start >= arrives_after:
            return "reply"
        raise Empty

    return get_once


def test_a_missed_wakeup_costs_one_slice_not_the_timeout():
    started = time.monotonic()
    assert _run(sliced_get(_missed_wakeup(0.1), timeout=30, slice_s=0.05)) == "reply"
    assert time.monotonic() - started < 2  # one long wait would have slept the whole 30 s


def test_no_message_raises_empty_at_the_timeout():
    started = time.monotonic()
    with pytest.raises(Empty):
        _run(sliced_get(_missed_wakeup(1e9), timeout=0.3, slice_s=0.05))
    assert 0.3 <= time.monotonic() - started < 2


def test_no_timeout_waits_until_the_message_comes():
    assert _run(sliced_get(_missed_wakeup(0.2), timeout=None, slice_s=0.05)) == "reply"


@pytest.mark.parametrize("kw,match", [(dict(timeout=-1), "timeout"), (dict(timeout="5"), "timeout"),
                                      (dict(timeout=True), "timeout"), (dict(timeout=1, slice_s=0), "slice_s")])
def test_bad_arguments_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        _run(sliced_get(_missed_wakeup(0), **kw))


@pytest.mark.slow  # starts a kernel
def test_the_course_client_runs_a_notebook_on_sliced_channels(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 6 * 7"), nbformat.v4.new_code_cell("print(x)")])
    client = CourseNotebookClient(nb, timeout=60, kernel_name="python3",
                                  resources={"metadata": {"path": str(tmp_path)}})
    seen = {}
    start = client.async_start_new_kernel_client

    async def spy(**kw):
        kc = await start(**kw)
        seen["client"], seen["shell"], seen["iopub"] = client.kc, client.kc.shell_channel, client.kc.iopub_channel
        return kc

    client.async_start_new_kernel_client = spy
    client.execute()
    assert nb.cells[1].outputs[0]["text"] == "42\n"
    assert isinstance(seen["client"], SlicedKernelClient)
    assert isinstance(seen["shell"], SlicedChannel) and isinstance(seen["iopub"], SlicedChannel)
