"""One lock around widget redraws, so two callbacks never draw with pyplot at the same time.

ipykernel may run two widget callbacks on two threads at once (a quick user clicking twice);
pyplot's state is global, and interleaved drawing can send a blank figure or a stale readout.
``with redraw_lock():`` serialises a whole callback: read the controls, compute, draw. Because the
controls are read inside the lock, the callback that runs last always shows the final state.
``show_figure(output, fig)`` puts a figure into an ``Output`` widget and closes it.
"""

from __future__ import annotations

import threading

import matplotlib.pyplot as plt
from IPython.display import display

_LOCK = threading.RLock()


def redraw_lock() -> threading.RLock:
    """The shared re-entrant lock: ``with redraw_lock(): ...``."""
    return _LOCK


def show_figure(output, fig) -> None:
    """Replace ``output``'s contents with ``fig``, then close the figure (never ``plt.show()``)."""
    with output:
        output.clear_output(wait=True)
        display(fig)
    plt.close(fig)
