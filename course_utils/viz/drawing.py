"""One lock around widget redraws, so two callbacks never draw with pyplot at the same time.

ipykernel may run two widget callbacks on two threads at once (a quick user clicking twice);
pyplot's state is global, and interleaved drawing can send a blank figure or a stale readout.
``with redraw_lock():`` serialises a whole callback: read the controls, compute, draw. Because the
controls are read inside the lock, the callback that runs last always shows the final state.
``show_figure(output, fig)`` puts a figure into an ``Output`` widget and closes it.

Widget figures are made with ``new_figure`` (a bare ``matplotlib.figure.Figure``), never with
pyplot: ipykernel 7 can run a widget callback on a subshell thread while matplotlib-inline's
``flush_figures`` hook (after every comm message) closes *every* pyplot figure, which can blank a
figure another thread is still drawing. A figure pyplot does not know about cannot be flushed.
"""

from __future__ import annotations

import io
import threading

import matplotlib.pyplot as plt
from IPython.display import Image, display
from matplotlib.figure import Figure

_LOCK = threading.RLock()


def redraw_lock() -> threading.RLock:
    """The shared re-entrant lock: ``with redraw_lock(): ...``."""
    return _LOCK


def new_figure(figsize: tuple[float, float], nrows: int = 1, ncols: int = 1, **subplot_kw):
    """A figure outside pyplot's registry: ``fig, ax = new_figure((5, 4))`` (axes as ``plt.subplots`` gives them).

    Its background is not painted (transparent, as every course figure: ``style.py``)."""
    fig = Figure(figsize=figsize)
    fig.patch.set_visible(False)
    return fig, fig.subplots(nrows, ncols, **subplot_kw)


def human_count(value: float, _pos=None) -> str:
    """A tick label a reader takes in at once: ``human_count(56_669_184)`` -> ``"56.7M"``, 2.5e8 -> ``"250M"``,
    1.75e11 -> ``"175B"``, 0 -> ``"0"`` (K, M, B, T; for axes: ``ax.yaxis.set_major_formatter(human_count)``)."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def show_figure(output, fig) -> None:
    """Replace ``output``'s contents with ``fig`` as a PNG, then close the figure (never ``plt.show()``).

    The PNG is rendered here rather than left to IPython's display formatter, which only knows
    about figures once the inline backend is active (it is not, if no pyplot figure came first).
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.get_dpi())
    output.course_png = buffer.getvalue()  # the latest picture, for the widget's static face (static_face.py)
    with output:
        output.clear_output(wait=True)
        display(Image(data=buffer.getvalue(), format="png"))
    plt.close(fig)  # a no-op for new_figure() figures, which pyplot never held
