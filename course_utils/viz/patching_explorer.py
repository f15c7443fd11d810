"""Notebook 13's patching explorer: a map of restored fractions, read one cell at a time.

``patching_explorer(grid, tokens, head_grid)`` -> a VBox with a map dropdown (the residual stream by block and
position; whole heads by block, when ``head_grid`` is given), a row and a column dropdown, the map with the
chosen cell outlined, and a readout of that cell, one fact per line (``restored fraction: 0.998``). The maps
are computed beforehand (``interp.residual_patching_map``, ``interp.head_patching_map``, dozens of forward
passes); the callback only selects a cell and redraws. Drawing is ``viz.inside_the_model.draw_patching_map``.
CSS classes (WIDGET_CONTRACT): ``course-patching``, ``course-patching-map``, ``course-patching-row``,
``course-patching-column``, ``course-readout``, ``course-figure``.
Leaves out: computing a map (``course_utils.interp.patching``), patching prompts typed in the widget.
"""

from __future__ import annotations

import html
from typing import NamedTuple, Sequence

import ipywidgets as widgets
import torch
from matplotlib.patches import Rectangle

from course_utils.viz.drawing import new_figure, redraw_lock, show_figure
from course_utils.viz.inside_the_model import draw_patching_map, patching_rows, token_label
from course_utils.viz.scaffold import figure_area, live_widget, readout_area
from course_utils.viz.style import course_figure

RESIDUAL, HEADS = "residual stream", "heads"


class PatchingMap(NamedTuple):
    """One map on offer: its restored fractions (rows, columns), the labels the readout and dropdowns use, and
    the figure's column tick labels."""

    grid: torch.Tensor
    rows: list[str]
    columns: list[str]
    ticks: list[str]


def _check_grid(name: str, grid, n_columns: int | None = None) -> torch.Tensor:
    if not isinstance(grid, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of restored fractions, got {type(grid).__name__}")
    if grid.ndim != 2 or 0 in grid.shape:
        raise ValueError(f"{name} must be a non-empty 2-D map (rows, columns), got shape {tuple(grid.shape)}")
    if n_columns is not None and grid.shape[1] != n_columns:
        raise ValueError(f"{name} has {grid.shape[1]} columns but tokens has {n_columns} (one per position)")
    return grid.detach().cpu()


def patching_maps(grid, tokens: Sequence[str], head_grid=None) -> dict[str, PatchingMap]:
    """The maps on offer by name: ``patching_maps(torch.zeros(3, 2), ["a", "b"])["residual stream"].columns``
    -> ``["position 0 'a'", "position 1 'b'"]``."""
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise TypeError("tokens must be a sequence of decoded tokens (str), one per position")
    grid = _check_grid("grid", grid, len(tokens))
    positions = [f"position {i} {t!r}" for i, t in enumerate(tokens)]
    maps = {RESIDUAL: PatchingMap(grid, patching_rows(grid.shape[0]), positions, [token_label(t) for t in tokens])}
    if head_grid is not None:
        head_grid = _check_grid("head_grid", head_grid)
        heads = [f"head {head}" for head in range(head_grid.shape[1])]
        maps[HEADS] = PatchingMap(head_grid, [f"block {layer}" for layer in range(head_grid.shape[0])], heads, heads)
    return maps


def patching_readout(maps: dict, name: str, row: int, column: int) -> str:
    """Plain lines: ``map: residual stream``, ``row: into block 2``, ``column: position 7 ' of'``,
    ``restored fraction: 0.123`` (three decimals, the value the map holds)."""
    grid, rows, columns, _ = maps[name]
    lines = [f"map: {name}", f"row: {rows[row]}", f"column: {columns[column]}",
             f"restored fraction: {float(grid[row, column]):.3f}"]
    return "<br>".join(html.escape(line) for line in lines)


@course_figure
def plot_patching_cell(maps: dict, name: str, row: int, column: int):
    """The map ``name`` with the cell (row, column) outlined and its value in the title."""
    grid, rows, columns, ticks = maps[name]
    fig, ax = new_figure((8, 3.4))
    draw_patching_map(fig, ax, grid, rows, ticks)
    ax.add_patch(Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="tab:orange", lw=3))
    ax.set_title(f"{name}: {rows[row]}, {columns[column]}: {float(grid[row, column]):.3f}", fontsize=9)
    fig.tight_layout()
    return fig


def patching_explorer(grid, tokens: Sequence[str], head_grid=None, start: tuple[int, int] = (0, 0)) -> widgets.VBox:
    """The widget over precomputed maps; ``start`` is the (row, column) first shown on the residual map."""
    maps = patching_maps(grid, tokens, head_grid)
    n_rows, n_columns = maps[RESIDUAL].grid.shape
    if not (isinstance(start, tuple) and len(start) == 2 and 0 <= start[0] < n_rows and 0 <= start[1] < n_columns):
        raise ValueError(f"start must be a (row, column) inside the {n_rows} x {n_columns} map, got {start!r}")

    def _options(labels: list[str]) -> list[tuple[str, int]]:
        return [(label, i) for i, label in enumerate(labels)]

    choice = widgets.Dropdown(options=list(maps), value=RESIDUAL, description="map")
    choice.add_class("course-patching-map")
    row = widgets.Dropdown(options=_options(maps[RESIDUAL].rows), value=start[0], description="row")
    row.add_class("course-patching-row")
    column = widgets.Dropdown(options=_options(maps[RESIDUAL].columns), value=start[1], description="column")
    column.add_class("course-patching-column")
    readout, figure = readout_area(), figure_area()
    busy = {"switching map": False}

    def _redraw() -> None:
        if busy["switching map"]:
            return
        readout.value = patching_readout(maps, choice.value, row.value, column.value)
        show_figure(figure, plot_patching_cell(maps, choice.value, row.value, column.value))

    def _switch_map(change) -> None:  # the new map's rows and columns, without a redraw per step
        with redraw_lock():
            chosen = maps[change["new"]]
            busy["switching map"] = True
            try:
                row.options, column.options = _options(chosen.rows), _options(chosen.columns)
                row.value, column.value = 0, 0
            finally:
                busy["switching map"] = False

    # observed before live_widget's own observer, which then redraws the whole new state once (traitlets calls
    # a trait's observers in the order they were registered)
    choice.observe(_switch_map, names="value")
    controls = widgets.HBox([choice, row, column])
    return live_widget([controls, figure, readout], "course-patching", [choice, row, column], _redraw)
