"""The course's one plotting style: figures that read on JupyterLab's light theme and on its dark theme.

A figure is stored as a PNG, and the same PNG is shown on a white page and on a near-black one
(JupyterLab's dark theme, ``#111111``). matplotlib's default, black ink on an opaque white figure, is
a white box on the dark page. The course's figures instead have a transparent background and draw
their text, ticks and spines in a mid grey (``INK``): contrast 4.0 on white and 4.7 on ``#111111``
(WCAG's ratio; 3 is its floor for graphics and large text), so one picture reads on both and sits in
the page like its text. Colour maps and the colour cycle are left as they are (they read on both).

``@course_figure`` on every function that builds a figure (``with course_style(): ...`` around a
notebook cell's own figure): matplotlib's settings are the course's while the figure is built (text
takes its colour when it is made), then restored; it holds the widgets' redraw lock, so a callback
drawing on another thread neither sees nor undoes it. Nothing changes at import.

Transparent how: the figure keeps matplotlib's white face colour but does not paint it (its patch is
hidden: ``new_figure`` hides it, ``course_style`` hides it on the pyplot figures made inside it). A
figure whose face colour is itself transparent would be tagged ``needs_background: light`` by
matplotlib-inline (it guesses from the tick labels' lightness), and JupyterLab paints a white box
behind such an image in the dark theme, which is what this style is for avoiding.
Leaves out: colour maps, per-figure colours (``INK`` is for the lines that were black).
"""

from __future__ import annotations

import contextlib
import functools

import matplotlib as mpl
import matplotlib.pyplot as plt

from course_utils.viz.drawing import redraw_lock

INK = "#7f7f7f"  # text, ticks, spines, and the reference lines that used to be black
COURSE_RC = {
    "axes.facecolor": "none",
    "text.color": INK,
    "axes.labelcolor": INK,
    "axes.titlecolor": INK,
    "axes.edgecolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "xtick.labelcolor": INK,
    "ytick.labelcolor": INK,
    "grid.color": INK,
    "grid.alpha": 0.4,
    "legend.facecolor": "none",
    "legend.edgecolor": INK,
    "legend.labelcolor": INK,
    "patch.edgecolor": INK,
    "hatch.color": INK,
    "boxplot.flierprops.markeredgecolor": INK,
}


@contextlib.contextmanager
def course_style():
    """The course's matplotlib settings inside the block (or the decorated function), under the redraw lock."""
    with redraw_lock():
        with mpl.rc_context(COURSE_RC):
            before = set(plt.get_fignums())
            yield
            for number in sorted(set(plt.get_fignums()) - before):  # oldest first: the newest stays pyplot's current
                plt.figure(number).patch.set_visible(False)
            interactive = mpl.is_interactive()
        # A kernel's first pyplot figure loads the inline backend, which turns interactive mode on; restoring
        # the rc settings would turn it off again and the kernel would show no later figure. Keep it.
        mpl.interactive(interactive)


def course_figure(build):
    """Decorate a function that builds a figure: it runs inside ``course_style()``; ``build.course_styled`` is True."""

    @functools.wraps(build)
    def styled(*args, **kwargs):
        with course_style():
            return build(*args, **kwargs)

    styled.course_styled = True
    return styled
