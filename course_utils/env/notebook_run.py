"""Running a notebook headless without the missed-wake-up stall: nbclient whose kernel channels wait in slices.

jupyter_client's asyncio channels wait for a message with a single ``await socket.poll(timeout)`` on a
zmq.asyncio socket. That poll sleeps until the socket's edge-triggered file descriptor fires; when the
edge is consumed elsewhere (libzmq processes pending commands during another operation on the socket) the
message sits in the socket and the poll wakes only at its timeout, where pyzmq does one last real
``poll(0)`` and finds it. Seen here: the kernel idle, the reply already sent, nbclient waiting out its
whole cell timeout (605 s in CI on a cell that takes a second; 45.6 s against a 40 s timeout in a loop),
then carrying on as if nothing happened.

``sliced_get(get_once, timeout)`` waits in slices of ``POLL_SLICE_S`` instead, each ending in that real
poll, so a missed wake-up costs at most one slice. ``SlicedKernelManager`` hands out clients whose shell,
iopub, stdin and control channels wait that way; ``CourseNotebookClient`` is nbclient's ``NotebookClient``
using it (tests, the release check, the grader), and ``make notebooks`` passes it to nbconvert with
``--ExecutePreprocessor.kernel_manager_class=course_utils.env.notebook_run.SlicedKernelManager``.
Leaves out nbval, which waits through blocking (level-triggered) ``zmq.Poller`` calls that do not miss.
"""

from __future__ import annotations

from queue import Empty
from time import monotonic
from typing import Any, Awaitable, Callable

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from traitlets import Type

POLL_SLICE_S = 0.5


async def sliced_get(get_once: Callable[[float], Awaitable[Any]], timeout: float | None,
                     slice_s: float = POLL_SLICE_S) -> Any:
    """Call ``get_once(seconds)`` (which returns a message or raises ``queue.Empty`` after ``seconds``) in
    slices of at most ``slice_s`` until a message comes or ``timeout`` seconds have passed (``None``: wait
    for ever), then raise ``Empty`` as one long wait would. A ``get_once`` that finds its message only when
    its wait ends (the missed wake-up) then returns after one slice, not after ``timeout``."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
        raise ValueError(f"timeout must be None or seconds >= 0, got {timeout!r}")
    if not slice_s > 0:
        raise ValueError(f"slice_s must be positive seconds, got {slice_s!r}")
    deadline = None if timeout is None else monotonic() + timeout
    while True:
        left = None if deadline is None else max(0.0, deadline - monotonic())
        try:
            return await get_once(slice_s if left is None else min(slice_s, left))
        except Empty:
            if left is not None and left <= slice_s:
                raise


class SlicedChannel(AsyncZMQSocketChannel):
    """An asyncio kernel channel whose ``get_msg`` waits in ``POLL_SLICE_S`` slices (``sliced_get``)."""

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
        return await sliced_get(super().get_msg, timeout)


class SlicedKernelClient(AsyncKernelClient):
    shell_channel_class = Type(SlicedChannel)  # type: ignore[assignment]
    iopub_channel_class = Type(SlicedChannel)  # type: ignore[assignment]
    stdin_channel_class = Type(SlicedChannel)  # type: ignore[assignment]
    control_channel_class = Type(SlicedChannel)  # type: ignore[assignment]


class SlicedKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` whose ``client()`` is a ``SlicedKernelClient`` (nbclient sets the manager's
    ``client_class`` after building it, so the class is chosen here, not through that trait)."""

    def client(self, **kwargs: Any) -> SlicedKernelClient:  # type: ignore[override]
        self.client_factory = SlicedKernelClient
        return super().client(**kwargs)  # type: ignore[return-value]


class CourseNotebookClient(NotebookClient):
    """nbclient's ``NotebookClient`` on a ``SlicedKernelManager``; otherwise the same options and behaviour."""

    kernel_manager_class = Type(SlicedKernelManager, config=True)  # type: ignore[assignment]
