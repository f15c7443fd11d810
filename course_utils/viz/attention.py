"""Pictures of attention for notebook 03: pattern heatmaps, the saturation curves, and a d_k viewer.

``plot_pattern(ax, pattern, tokens)`` draws one attention pattern; ``plot_saturation(...)`` draws
mean max weight and entropy against d_k with and without the 1/sqrt(d_k) scale;
``dk_saturation_viewer(tokens)`` is the widget: a d_k slider, two heatmaps (scaled, unscaled)
for random unit-variance queries and keys, and a plain-text readout. Every number comes from
``course_utils.attention.dot_product``; the callbacks only call those functions and draw.

CSS classes (see WIDGET_CONTRACT.md): root ``course-attention-viewer``, slider ``course-dk``,
readout ``course-readout``, figure ``course-figure``.
"""

from __future__ import annotations

import math
from typing import Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt

from course_utils.attention.dot_product import pattern_stats, random_scores
from course_utils.softmax import softmax
from course_utils.viz.drawing import new_figure, show_figure
from course_utils.viz.scaffold import figure_area, live_widget, readout_area
from course_utils.viz.style import course_figure


@course_figure
def plot_pattern(ax, pattern, tokens: Sequence[str], title: str | None = None, annotate: bool = True):
    """Heatmap of one (q_pos, k_pos) pattern: rows are queries (who looks), columns keys (who is looked at)."""
    data = pattern.detach().cpu().double().numpy()
    image = ax.imshow(data, cmap="Blues", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(tokens)), tokens, rotation=45, ha="right")
    ax.set_yticks(range(len(tokens)), tokens)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    if annotate and data.shape[0] * data.shape[1] <= 100:
        for i in range(data.shape[0]):
            for j in range(data.shape[1]):
                ax.text(
                    j,
                    i,
                    f"{data[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if data[i, j] > 0.6 else "black",
                )
    if title:
        ax.set_title(title)
    return image


@course_figure
def plot_saturation(d_ks: Sequence[int], scaled: Sequence[dict], unscaled: Sequence[dict], n_keys: int):
    """Two panels against d_k: mean largest weight, and mean entropy (with log(n_keys), the uniform maximum)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for stats, label, style in ((scaled, "scaled by 1/√d_k", "o-"), (unscaled, "unscaled", "s--")):
        left.plot(d_ks, [s["max_weight"] for s in stats], style, label=label)
        right.plot(d_ks, [s["entropy"] for s in stats], style, label=label)
    right.axhline(math.log(n_keys), color="grey", lw=0.8, ls=":", label=f"uniform over {n_keys} keys")
    for ax, name in ((left, "mean largest weight"), (right, "mean entropy (nats)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.set_ylabel(name)
        ax.legend(fontsize=8)
    fig.suptitle(f"softmax over {n_keys} keys, random unit-variance q and k")
    fig.tight_layout()
    return fig


def _patterns(n_tokens: int, d_k: int, seed: int):
    """(scaled, unscaled) softmax patterns for the same random queries and keys."""
    scaled = softmax(random_scores(n_tokens, n_tokens, d_k, scaled=True, seed=seed))
    unscaled = softmax(random_scores(n_tokens, n_tokens, d_k, scaled=False, seed=seed))
    return scaled, unscaled


def dk_readout(d_k: int, scaled, unscaled) -> str:
    """Plain text, one fact per line: ``d_k = 64``, then max weight and entropy for each pattern."""
    lines = [f"d_k = {d_k}"]
    for name, pattern in (("scaled", scaled), ("unscaled", unscaled)):
        stats = pattern_stats(pattern)
        lines.append(f"{name}: mean max weight {stats['max_weight']:.3f}, mean entropy {stats['entropy']:.3f} nats")
    return "<br>".join(lines)


def dk_saturation_viewer(tokens: Sequence[str], d_k: int = 64, seed: int = 0) -> widgets.VBox:
    """A d_k slider over random queries/keys for ``tokens``: scaled and unscaled patterns side by side."""
    slider = widgets.IntSlider(value=d_k, min=1, max=512, step=1, description="d_k", continuous_update=False)
    slider.add_class("course-dk")
    readout, figure = readout_area(), figure_area()

    @course_figure
    def _draw() -> None:
        value = slider.value
        scaled, unscaled = _patterns(len(tokens), value, seed)
        readout.value = dk_readout(value, scaled, unscaled)
        fig, axes = new_figure((9, 4), 1, 2)
        plot_pattern(axes[0], scaled, tokens, f"scaled: softmax(q·k / √{value})")
        plot_pattern(axes[1], unscaled, tokens, "unscaled: softmax(q·k)")
        fig.tight_layout()
        show_figure(figure, fig)

    return live_widget([slider, readout, figure], "course-attention-viewer", [slider], _draw)
