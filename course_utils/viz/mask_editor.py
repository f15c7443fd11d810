"""Notebook 04's mask editor: click cells of the query × key table on or off, or pick a preset, and
watch the attention pattern recompute.

``mask_editor(tokens, scores)`` -> a VBox with a preset dropdown (causal, padding, sliding window,
prefix-LM, block-diagonal documents, all), one toggle per (query, key) cell (True = may attend), a
heatmap of the pattern, and a readout of its rows. A query with nothing allowed is reported as a
warning and its row is all zeros (``masked_softmax``'s documented behaviour), never NaN.
The maths, presets included (``masking.preset_mask``), is ``course_utils.masking`` and
``course_utils.softmax``. CSS classes (WIDGET_CONTRACT):
``course-mask-editor``, ``course-mask-cell``, ``course-mask-preset``, ``course-readout``,
``course-figure``.
"""

from __future__ import annotations

from typing import Sequence

import ipywidgets as widgets
from matplotlib.patches import Rectangle
import torch

from course_utils import masking
from course_utils.masking import PRESETS, preset_mask
from course_utils.softmax import masked_softmax
from course_utils.viz.attention import plot_pattern
from course_utils.viz.drawing import new_figure, redraw_lock, show_figure
from course_utils.viz.scaffold import figure_area, live_widget, readout_area
from course_utils.viz.style import course_figure


def mask_readout(pattern: torch.Tensor, mask: torch.Tensor, tokens: Sequence[str]) -> str:
    """One line per query, ``q2 IS: 0.272 0.244 0.484 0.000 ...``, then a WARNING line per empty row."""
    lines = [
        f"q{i} {tok}: " + " ".join(f"{w:.3f}" for w in row)
        for i, (tok, row) in enumerate(zip(tokens, pattern.tolist()))
    ]
    for i in masking.fully_masked_rows(mask).nonzero().flatten().tolist():
        lines.append(f"WARNING: fully masked row q{i} ({tokens[i]}): nothing to attend to, its weights are all 0")
    return "<br>".join(lines)


@course_figure
def plot_masked_pattern(pattern: torch.Tensor, mask: torch.Tensor, tokens: Sequence[str]):
    """The pattern as a heatmap with blocked cells crossed out and empty rows outlined in red."""
    fig, ax = new_figure((4.8, 4.2))
    plot_pattern(ax, pattern, tokens, title="attention pattern (× = masked)", annotate=False)
    for (i, j), weight in zip(
        torch.cartesian_prod(torch.arange(len(tokens)), torch.arange(len(tokens))).tolist(), pattern.flatten().tolist()
    ):
        label, colour = (f"{weight:.2f}", "white" if weight > 0.6 else "black") if mask[i, j] else ("×", "grey")
        ax.text(j, i, label, ha="center", va="center", fontsize=7, color=colour)
    for i in masking.fully_masked_rows(mask).nonzero().flatten().tolist():
        ax.add_patch(Rectangle((-0.5, i - 0.5), len(tokens), 1, fill=False, edgecolor="red", lw=2))
    fig.tight_layout()
    return fig


def mask_editor(tokens: Sequence[str], scores: torch.Tensor, preset: str = "causal") -> widgets.VBox:
    """The widget over a fixed (n, n) score table; toggles start at ``preset``."""
    n = len(tokens)
    scores = torch.as_tensor(scores, dtype=torch.float64)
    if tuple(scores.shape) != (n, n):
        raise ValueError(f"scores must have shape ({n}, {n}) for {n} tokens, got {tuple(scores.shape)}")
    start = preset_mask(preset, n)
    column = max(42, 10 * max(len(t) for t in tokens) + 4)  # px: wide enough for the longest key token in capitals
    cells = [
        [
            widgets.ToggleButton(
                value=bool(start[i, j]),
                description="",
                tooltip=f"q{i} k{j}",
                layout=widgets.Layout(width=f"{column - 4}px", height="30px"),
            )
            for j in range(n)
        ]
        for i in range(n)
    ]
    dropdown = widgets.Dropdown(options=PRESETS, value=preset, description="preset")
    dropdown.add_class("course-mask-preset")
    readout, figure = readout_area(), figure_area()
    busy = {"setting preset": False}

    def _redraw() -> None:
        if busy["setting preset"]:
            return
        mask = torch.tensor([[c.value for c in row] for row in cells], dtype=torch.bool)
        pattern = masked_softmax(scores, mask)
        for row in cells:
            for c in row:
                c.icon, c.button_style = ("check", "success") if c.value else ("", "")
        readout.value = mask_readout(pattern, mask, tokens)
        show_figure(figure, plot_masked_pattern(pattern, mask, tokens))

    def _apply_preset(change) -> None:
        with redraw_lock():
            mask = preset_mask(change["new"], n)
            busy["setting preset"] = True
            try:
                for i, row in enumerate(cells):
                    for j, c in enumerate(row):
                        c.value = bool(mask[i, j])
            finally:
                busy["setting preset"] = False
            _redraw()

    for row in cells:
        for c in row:
            c.add_class("course-mask-cell")
    dropdown.observe(_apply_preset, names="value")
    header = [widgets.Label("q \\ k")]
    header += [widgets.Label(t, layout=widgets.Layout(width=f"{column - 4}px")) for t in tokens]
    grid_items = header + [item for i, row in enumerate(cells) for item in [widgets.Label(f"q{i} {tokens[i]}")] + row]
    grid = widgets.GridBox(grid_items, layout=widgets.Layout(grid_template_columns=f"90px repeat({n}, {column}px)"))
    toggles = [c for row in cells for c in row]
    return live_widget([dropdown, widgets.HBox([grid, figure]), readout], "course-mask-editor", toggles, _redraw)
