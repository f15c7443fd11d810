"""Notebook 05's attention-pattern viewer: pick a layer, a head and a query; see the head's pattern,
the weights of that query's row, and the head's scores (e.g. previous-token and induction).

``attention_viewer(patterns, tokens, scores)`` -> a VBox. ``patterns`` is one (head, q_pos, k_pos)
tensor per layer (one sequence); ``scores`` maps a score's name to one (head,) tensor per layer.
The callback only selects and draws. CSS classes (WIDGET_CONTRACT): root
``course-attention-viewer``, ``course-layer``, ``course-head``, ``course-query``,
``course-readout``, ``course-figure``. Leaves out comparing several heads side by side (the
notebook draws a grid with ``plot_heads``).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from course_utils.viz.attention import plot_pattern
from course_utils.viz.drawing import new_figure, show_figure
from course_utils.viz.scaffold import figure_area, live_widget, readout_area
from course_utils.viz.style import course_figure


def viewer_readout(
    patterns: Sequence[torch.Tensor],
    tokens: Sequence[str],
    layer: int,
    head: int,
    query: int,
    scores: Mapping[str, Sequence[torch.Tensor]] | None = None,
) -> str:
    """Plain lines: ``layer 1 head 0``, each score (3 decimals), then ``k3 A: 0.250`` for the chosen query's row."""
    lines = [f"layer {layer} head {head}"]
    for name, per_layer in (scores or {}).items():
        lines.append(f"{name}: {float(per_layer[layer][head]):.3f}")
    lines.append(f"query q{query} ({tokens[query]}) attends to:")
    row = patterns[layer][head, query].tolist()
    lines += [f"k{j} {tok}: {w:.3f}" for j, (tok, w) in enumerate(zip(tokens[: query + 1], row[: query + 1]))]
    return "<br>".join(lines)


@course_figure
def plot_heads(
    patterns: Sequence[torch.Tensor], tokens: Sequence[str], scores: Mapping[str, Sequence[torch.Tensor]] | None = None
):
    """A grid of every layer's and head's pattern, each titled with its scores."""
    n_layers, n_heads = len(patterns), patterns[0].shape[0]
    fig, axes = plt.subplots(n_layers, n_heads, figsize=(3.4 * n_heads, 3.2 * n_layers), squeeze=False)
    for layer in range(n_layers):
        for head in range(n_heads):
            ax = axes[layer][head]
            plot_pattern(ax, patterns[layer][head], tokens, annotate=False)
            details = ", ".join(f"{name} {float(v[layer][head]):.2f}" for name, v in (scores or {}).items())
            ax.set_title(f"L{layer} H{head}" + (f"\n{details}" if details else ""), fontsize=9)
            ax.tick_params(labelsize=6)
            ax.set_xlabel("")
            ax.set_ylabel("")
    fig.tight_layout()
    return fig


@course_figure
def plot_head(pattern: torch.Tensor, tokens: Sequence[str], layer: int, head: int, query: int):
    """One head's (q_pos, k_pos) pattern with the chosen query's row marked."""
    fig, ax = new_figure((5, 4.4))
    plot_pattern(ax, pattern, tokens, title=f"layer {layer}, head {head}", annotate=False)
    ax.axhline(query, color="orange", lw=1)
    fig.tight_layout()
    return fig


def attention_viewer(
    patterns: Sequence[torch.Tensor], tokens: Sequence[str], scores: Mapping[str, Sequence[torch.Tensor]] | None = None
) -> widgets.VBox:
    """The widget: layer and head dropdowns, a query slider, the pattern heatmap and a readout."""
    patterns = [p.detach().cpu() for p in patterns]
    if not patterns or any(p.ndim != 3 or p.shape[-1] != len(tokens) or p.shape[-2] != len(tokens) for p in patterns):
        raise ValueError(
            f"patterns must be one (head, {len(tokens)}, {len(tokens)}) tensor per layer for {len(tokens)} tokens"
        )
    layer = widgets.Dropdown(options=[(f"layer {i}", i) for i in range(len(patterns))], value=0, description="layer")
    layer.add_class("course-layer")
    head = widgets.Dropdown(
        options=[(f"head {i}", i) for i in range(patterns[0].shape[0])], value=0, description="head"
    )
    head.add_class("course-head")
    query = widgets.IntSlider(value=len(tokens) - 1, min=0, max=len(tokens) - 1, description="query")
    query.add_class("course-query")
    readout, figure = readout_area(), figure_area()

    def _redraw() -> None:
        readout.value = viewer_readout(patterns, tokens, layer.value, head.value, query.value, scores)
        show_figure(figure, plot_head(patterns[layer.value][head.value], tokens, layer.value, head.value, query.value))

    children = [widgets.HBox([layer, head, query]), widgets.HBox([figure, readout])]
    return live_widget(children, "course-attention-viewer", [layer, head, query], _redraw)
