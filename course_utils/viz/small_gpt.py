"""Notebook 09's figures: the loss curve (live during training, and static after), the learning-rate
schedule, and the residual stream's size block by block.

``LiveLossCurve(bigram)`` is an ``on_eval`` hook for ``training.train``: it redraws one figure in
place (an IPython display handle, not a widget), so the curve grows while the bar runs. No maths here.
"""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
from IPython.display import Image, display

from course_utils.viz.drawing import new_figure, redraw_lock
from course_utils.viz.style import course_figure


@course_figure
def draw_loss_curve(ax, log: dict, bigram: float | None = None) -> None:
    """Per-step training loss (thin), validation loss at each evaluation (dots), the bigram baseline (dashed)."""
    ax.plot(range(1, len(log["train_loss"]) + 1), log["train_loss"], lw=0.8, alpha=0.6, label="train (each batch)")
    ax.plot(log["eval_step"], log["val_loss"], "o-", label="validation")
    if bigram is not None:
        ax.axhline(bigram, ls="--", color="grey", label="bigram baseline")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.legend()


class LiveLossCurve:
    """``train(..., on_eval=LiveLossCurve(bigram))`` shows the curve and updates it after every evaluation."""

    def __init__(self, bigram: float | None = None, figsize=(7, 3.5)):
        self.bigram, self.figsize, self.handle = bigram, figsize, None

    @course_figure
    def __call__(self, log: dict) -> None:
        with redraw_lock():
            fig, ax = new_figure(self.figsize)
            draw_loss_curve(ax, log, self.bigram)
            fig.tight_layout()
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png")
            image = Image(data=buffer.getvalue(), format="png")
            if self.handle is None:
                self.handle = display(image, display_id=True)
            else:
                self.handle.update(image)


@course_figure
def plot_loss_curve(log: dict, bigram: float | None = None):
    """The finished curve as an ordinary figure."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    draw_loss_curve(ax, log, bigram)
    fig.tight_layout()
    return fig


@course_figure
def plot_schedule(lrs) -> plt.Figure:
    """The learning rate at every step."""
    fig, ax = plt.subplots(figsize=(6, 2.5))
    ax.plot(lrs)
    ax.set_xlabel("step")
    ax.set_ylabel("learning rate")
    fig.tight_layout()
    return fig


@course_figure
def plot_stream_size(sizes: dict[str, list[float]]):
    """One line per arrangement: the residual stream's RMS after each block."""
    fig, ax = plt.subplots(figsize=(6, 3))
    for name, values in sizes.items():
        ax.plot(range(len(values)), values, "o-", label=name)
    ax.set_xlabel("after block")
    ax.set_ylabel("RMS of the stream")
    ax.legend()
    fig.tight_layout()
    return fig
