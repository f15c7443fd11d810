"""Notebook 06's plots and its sparsity widget.

Static plots (pyplot figures for ordinary cells): the activations, angle histograms, the 1/√D fit,
WᵀW with feature norms, the 2-D feature picture, feature dimensionality against sparsity, and the
SAE's best cosines. ``sparsity_explorer(model)`` is a slider over the *already trained* instances of a
5-features-in-2-dimensions ``ToyModel``: the callback looks up one instance and redraws WᵀW and the
2-D picture side by side (no training in the callback). CSS classes: ``course-sparsity``,
``course-sparsity-slider``, ``course-readout``, ``course-figure``.
"""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from course_utils.superposition import toy_models
from course_utils.viz.drawing import new_figure, show_figure
from course_utils.viz.scaffold import figure_area, live_widget, readout_area
from course_utils.viz.style import INK, course_figure

PLATEAUS = {"1": 1.0, "1/2": 0.5, "2/5": 0.4, "1/3": 1 / 3}


@course_figure
def plot_activations(x: torch.Tensor, curves: dict[str, torch.Tensor], gap: torch.Tensor):
    """Left: each activation against x. Right: exact minus tanh GELU (the gap)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    for name, y in curves.items():
        left.plot(x, y, label=name, lw=1.6)
    left.set(xlabel="x", ylabel="activation", title="ReLU and the two GELUs")
    left.legend(fontsize=8)
    right.plot(x, gap, color="C3")
    right.set(xlabel="x", ylabel="exact − tanh", title="how far apart the two GELUs are")
    fig.tight_layout()
    return fig


@course_figure
def plot_angle_histograms(stats: list):
    """One histogram of pair angles per dimension, as densities, zoomed on 90°."""
    fig, ax = plt.subplots(figsize=(8, 3.4))
    for s in stats:
        centres = (s.hist_edges[1:] + s.hist_edges[:-1]) / 2
        width = float(s.hist_edges[1] - s.hist_edges[0])
        ax.plot(centres, s.hist_counts / (s.n_pairs * width), label=f"D = {s.dim:,} (RMS {s.rms_deviation_deg:.2f}°)")
    ax.set(
        xlim=(55, 125),
        xlabel="angle between a pair (degrees)",
        ylabel="density",
        title=f"{stats[0].n_vectors:,} random unit vectors: every pair's angle",
    )
    ax.set_yscale("log")
    ax.set_ylim(1e-4, None)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@course_figure
def plot_power_law(dims, rms_rad, fit: tuple[float, float]):
    """RMS deviation (radians) against D on log-log axes, with the fitted c·D^k and 1/√D."""
    c, k = fit
    dims_t = torch.as_tensor(dims, dtype=torch.float64)
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.loglog(dims_t, rms_rad, "o", label="measured")
    ax.loglog(dims_t, c * dims_t**k, "-", label=f"fit {c:.3f} · D^{k:.3f}")
    ax.loglog(dims_t, dims_t**-0.5, ":", color=INK, label="1/√D")
    ax.set(xlabel="dimension D", ylabel="RMS of (angle − 90°), radians", title="the spread shrinks like 1/√D")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _interference_limit(W: torch.Tensor) -> float:
    """The colour scale's half-width: the largest |W_iᵀW_j| (over every instance when W is 3-D)."""
    return max(float(toy_models.interference(W).abs().max()), 1e-6)


def _draw_interference(ax, W: torch.Tensor, title: str, limit: float):
    image = ax.imshow(toy_models.interference(W), cmap="RdBu", vmin=-limit, vmax=limit)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    return image


def _interference_colorbar(fig, image, axes) -> None:
    """One colour bar for the WᵀW panels ``axes``: red negative, white 0, blue positive."""
    fig.colorbar(image, ax=axes, shrink=0.8, label=r"$W_i^\top W_j$")


def _draw_features_2d(ax, W: torch.Tensor) -> None:
    for i in range(W.shape[1]):
        ax.annotate(
            "",
            xy=(float(W[0, i]), float(W[1, i])),
            xytext=(0, 0),
            arrowprops=dict(arrowstyle="->", color=f"C{i % 10}", lw=2),
        )
        ax.text(1.12 * float(W[0, i]), 1.12 * float(W[1, i]), str(i), ha="center", va="center", fontsize=8)
    limit = max(1.3, 1.3 * float(W.norm(dim=0).max()))
    ax.set(xlim=(-limit, limit), ylim=(-limit, limit), aspect="equal")
    ax.axhline(0, color="0.8", lw=0.5)
    ax.axvline(0, color="0.8", lw=0.5)


@course_figure
def plot_sparsity_grid(W: torch.Tensor, sparsity: torch.Tensor):
    """Top row WᵀW per instance, bottom row each feature's norm (bar), for W of shape (inst, hidden, feat)."""
    n = W.shape[0]
    fig, axes = plt.subplots(
        2, n, figsize=(2.1 * n + 0.8, 4.4), gridspec_kw={"height_ratios": [2, 1]}, layout="constrained"
    )
    norms, limit = toy_models.feature_norms(W), _interference_limit(W)  # one colour scale for the whole row
    for k in range(n):
        image = _draw_interference(axes[0, k], W[k], f"S = {float(sparsity[k]):.3g}", limit)
        axes[1, k].bar(range(W.shape[2]), norms[k], color=["C0" if v > 0.5 else "0.7" for v in norms[k].tolist()])
        axes[1, k].set_ylim(0, 1.5)
        axes[1, k].set_xticks([])
        if k:
            axes[1, k].set_yticks([])
    axes[1, 0].set_ylabel("‖W_i‖")
    _interference_colorbar(fig, image, list(axes[0]))
    fig.suptitle("WᵀW (top) and feature norms (bottom, blue > 0.5) as sparsity grows", fontsize=10)
    return fig


@course_figure
def plot_features_2d(W: torch.Tensor, title: str):
    """The feature directions of one 2-dimensional instance as arrows."""
    fig, ax = plt.subplots(figsize=(3.6, 3.6))
    _draw_features_2d(ax, W)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


@course_figure
def plot_dimensionality(sparsity: torch.Tensor, dims: torch.Tensor, dims_per_feature: torch.Tensor):
    """Every feature's D_i (dots) and m / ‖W‖_F² (line) against 1/(1 − S), with the 1, 1/2 and 2/5 levels."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    x = 1 / (1 - sparsity.double())
    for i in range(dims.shape[1]):
        ax.semilogx(x, dims[:, i], "o", color="C0", alpha=0.5, ms=4)
    ax.semilogx(x, dims_per_feature, "-", color=INK, lw=1, label="hidden dims per represented feature, m / ‖W‖²_F")
    for label, level in list(PLATEAUS.items())[:3]:
        ax.axhline(level, color="C3", ls=":", lw=1)
        ax.text(x.max() * 1.05, level, label, va="center", color="C3")
    ax.set(
        xlabel="1 / (1 − sparsity)",
        ylabel="feature dimensionality D_i",
        ylim=(0, 1.1),
        title="features settle on fractions of a dimension",
    )
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


@course_figure
def plot_sae_cosines(best: torch.Tensor, threshold: float):
    """Each true feature's best cosine with any SAE dictionary direction."""
    fig, ax = plt.subplots(figsize=(6, 2.8))
    ax.bar(range(len(best)), best, color=["C2" if b > threshold else "C3" for b in best.tolist()])
    ax.axhline(threshold, color=INK, ls=":", lw=1)
    ax.set(
        ylim=(0, 1.05),
        xlabel="true feature (represented ones)",
        ylabel="best cosine",
        title="does the SAE's dictionary contain each true direction?",
    )
    fig.tight_layout()
    return fig


def sparsity_readout(W: torch.Tensor, sparsity: float) -> str:
    """One line per fact about an instance: its sparsity, how many features it keeps, their D_i."""
    norms = toy_models.feature_norms(W)
    dims = toy_models.feature_dimensionality(W)
    kept = int((norms > 0.5).sum())
    return (
        f"sparsity S = {sparsity:.3f}<br>features with ‖W_i‖ > 0.5: {kept} of {W.shape[1]}<br>"
        f"D_i: {', '.join(f'{d:.2f}' for d in dims.tolist())}"
    )


@course_figure
def plot_instance(W: torch.Tensor, sparsity: float):
    """WᵀW and the 2-D arrows of one instance side by side (a ``new_figure``, safe in callbacks)."""
    fig, (left, right) = new_figure((7.6, 3.4), 1, 2)
    fig.set_layout_engine("constrained")  # leaves room for the colour bar
    image = _draw_interference(left, W, f"WᵀW at S = {sparsity:.3f}", _interference_limit(W))
    _interference_colorbar(fig, image, left)
    _draw_features_2d(right, W)
    right.set_title("feature directions in the 2 hidden dimensions", fontsize=9)
    return fig


def sparsity_explorer(model: toy_models.ToyModel) -> widgets.VBox:
    """A slider over a trained 2-hidden-dimension ``ToyModel``'s instances (ordered by sparsity)."""
    if model.n_hidden != 2:
        raise ValueError(f"model must have n_hidden = 2 to be drawn in the plane, got {model.n_hidden}")
    W = model.W.detach().cpu()
    sparsity = model.sparsity.cpu()
    options = [(f"{float(s):.3f}", k) for k, s in enumerate(sparsity)]
    slider = widgets.SelectionSlider(
        options=options, value=len(options) - 1, description="sparsity", continuous_update=False
    )
    slider.add_class("course-sparsity-slider")
    readout, figure = readout_area(), figure_area()

    def _redraw() -> None:
        k = slider.value
        readout.value = sparsity_readout(W[k], float(sparsity[k]))
        show_figure(figure, plot_instance(W[k], float(sparsity[k])))

    return live_widget([slider, readout, figure], "course-sparsity", [slider], _redraw)


@course_figure
def plot_instances_2d(W: torch.Tensor, sparsity: torch.Tensor, indices):
    """The static twin of the widget: the 2-D picture of a few instances side by side."""
    indices = list(indices)
    fig, axes = plt.subplots(1, len(indices), figsize=(2.6 * len(indices), 2.9))
    for ax, k in zip(axes, indices):
        _draw_features_2d(ax, W[k])
        kept = int((toy_models.feature_norms(W[k]) > 0.5).sum())
        ax.set_title(f"S = {float(sparsity[k]):.3f}: {kept} features", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig
