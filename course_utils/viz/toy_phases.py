"""Notebook 06's plots of training to convergence and of the importance × sparsity phase picture.

``plot_loss_curves`` draws each instance's training loss (a running mean) on a log scale, so the flat tail
shows that training has converged; ``plot_phase_diagram`` colours a ``toy_phases.PhaseSweep`` by arrangement.
Plotting only: the models are trained by ``superposition.toy_models`` and ``superposition.phases``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.colors import ListedColormap

from course_utils.superposition.phases import PHASES, PhaseSweep
from course_utils.viz.style import course_figure

PHASE_COLOURS = ("#4c72b0", "#dd8452", "#c44e52")  # not represented, dedicated dimension, superposition


@course_figure
def plot_loss_curves(history: torch.Tensor, sparsity: torch.Tensor, window: int = 50):
    """Training loss per instance, averaged over ``window`` steps, against the step (log y): (steps, inst)."""
    fig, ax = plt.subplots(figsize=(7, 3.4))
    kernel = torch.ones(1, 1, window) / window
    smooth = torch.nn.functional.conv1d(history.T[:, None, :], kernel)[:, 0]  # (inst, steps - window + 1)
    steps = torch.arange(window, history.shape[0] + 1)
    for k in range(history.shape[1]):
        ax.semilogy(steps, smooth[k], label=f"S = {float(sparsity[k]):.3g}")
    ax.set(xlabel="step", ylabel=f"loss (mean of {window} steps)", title="training loss: flat by the end")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


@course_figure
def plot_phase_diagram(sweep: PhaseSweep):
    """One coloured cell per trained model: relative importance of the extra feature (x) against density (y)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    r, d = sweep.relative_importance.double(), sweep.density.double()
    edges = [torch.cat([v[:1] ** 1.5 / v[1:2] ** 0.5, (v[1:] * v[:-1]).sqrt(), v[-1:] ** 1.5 / v[-2:-1] ** 0.5])
             for v in (r, d)]  # geometric midpoints: cells centred on the grid values on log axes
    ax.pcolormesh(edges[0], edges[1], sweep.phases, cmap=ListedColormap(PHASE_COLOURS), vmin=-0.5, vmax=2.5)
    ax.set(xscale="log", yscale="log", xlabel="relative importance of the extra feature",
           ylabel="feature density 1 − S", title="2 features, 1 dimension: which arrangement wins")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in PHASE_COLOURS]
    ax.legend(handles, [f"extra feature: {p}" if i < 2 else p for i, p in enumerate(PHASES)], fontsize=8,
              loc="lower left", framealpha=0.9)
    fig.tight_layout()
    return fig
