"""Notebook 13's logit-lens table: the lens's top token at every layer and position of a prompt.

``lens_table_widget(model, tokenizer, prompts)`` -> a VBox with a prompt dropdown and a position dropdown, a
table (rows: the embedding, then the stream after each block; columns: the prompt's positions) whose cells
show the top token, coloured by its probability, the chosen position outlined, and a readout of that column,
one line per layer: ``after block 2, position 5: 'ing' 0.812``. Every prompt's table is computed when the
widget is built (``lens_tables``, with ``interp.lens_top_tokens``: one forward pass per prompt); the callback
only selects a prompt and a position and redraws. ``plot_lens_table`` draws the same table as a pyplot
figure, for the notebook's static face. CSS classes (WIDGET_CONTRACT): ``course-lens``, ``course-lens-prompt``,
``course-lens-position``, ``course-readout``, ``course-figure``.
Leaves out: the lens itself (``course_utils.interp.logit_lens``), prompts typed in the widget.
"""

from __future__ import annotations

import html
from typing import Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

from course_utils.interp.logit_lens import lens_top_tokens
from course_utils.viz.drawing import new_figure, redraw_lock, show_figure
from course_utils.viz.inside_the_model import token_label
from course_utils.viz.scaffold import figure_area, live_widget, readout_area
from course_utils.viz.style import course_figure

_CELL_CHARS = 6  # a cell shows at most this many characters of its token


def lens_rows(n_rows: int) -> list[str]:
    """The table's rows: ``lens_rows(3)`` -> ``["embedding", "after block 0", "after block 1"]``."""
    return ["embedding"] + [f"after block {layer}" for layer in range(n_rows - 1)]


def lens_tables(model, tokenizer, prompts: Sequence[str]) -> dict[str, dict]:
    """For each prompt: ``prompt`` (itself), ``tokens`` (its decoded tokens), ``top_tokens`` (the lens's top
    token per layer and position, decoded: a list of rows) and ``top_probs`` ((n_layers + 1, pos), on the CPU)."""
    if isinstance(prompts, str) or not prompts or not all(isinstance(p, str) and p for p in prompts):
        raise ValueError("prompts must be a non-empty sequence of non-empty strings")
    tables = {}
    for prompt in prompts:
        ids = torch.tensor([tokenizer.encode(prompt)], device=model.W_E.device)  # (1, pos), on the model's device
        top = lens_top_tokens(model, ids)  # (layer, 1, pos) each
        tables[prompt] = {
            "prompt": prompt,
            "tokens": [tokenizer.decode([i]) for i in ids[0].tolist()],
            "top_tokens": [[tokenizer.decode([i]) for i in row] for row in top["top_ids"][:, 0].tolist()],
            "top_probs": top["top_probs"][:, 0].cpu(),
        }
    return tables


def lens_readout(table: dict, position: int) -> str:
    """Plain lines: ``prompt: 'YORK:...'``, ``position 12 reads ' k'``, then per layer
    ``after block 0, position 12: 'ing' 0.812`` (the top token's repr, its probability to three decimals)."""
    lines = [f"prompt: {table['prompt']!r}", f"position {position} reads {table['tokens'][position]!r}"]
    for name, tops, probs in zip(lens_rows(len(table["top_tokens"])), table["top_tokens"], table["top_probs"].tolist()):
        lines.append(f"{name}, position {position}: {tops[position]!r} {probs[position]:.3f}")
    return "<br>".join(html.escape(line) for line in lines)


@course_figure
def draw_lens_table(fig, ax, table: dict, position: int | None = None) -> None:
    """The table on ``ax``: cells coloured by the top token's probability, labelled by the token (a space shown
    as ␣) and the probability."""
    probs = table["top_probs"].double()  # (layer, pos)
    image = ax.imshow(probs.numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for layer, (tops, row) in enumerate(zip(table["top_tokens"], probs.tolist())):
        for pos, (token, p) in enumerate(zip(tops, row)):
            label = token_label(token).replace(" ", "␣")[:_CELL_CHARS]  # a space token stays visible
            ax.text(pos, layer, f"{label}\n{p:.2f}", ha="center", va="center", fontsize=6.5,
                    color="white" if p > 0.6 else "black")
    ax.set_xticks(range(len(table["tokens"])), [token_label(t) for t in table["tokens"]], rotation=90, fontsize=8)
    ax.set_yticks(range(probs.shape[0]), lens_rows(probs.shape[0]))
    ax.set_xlabel("position (the token read there)")
    if position is not None:
        ax.add_patch(Rectangle((position - 0.5, -0.5), 1, probs.shape[0], fill=False, edgecolor="tab:orange", lw=3))
    fig.colorbar(image, ax=ax, label="top token's probability", fraction=0.03)


def _size(table: dict) -> tuple[float, float]:
    return (max(6.0, 0.5 * len(table["tokens"]) + 2.5), 0.55 * len(table["top_tokens"]) + 1.8)


@course_figure
def plot_lens_table(table: dict, position: int | None = None):
    """The table as a pyplot figure (a notebook cell's own figure, the widget's static face)."""
    fig, ax = plt.subplots(figsize=_size(table))
    draw_lens_table(fig, ax, table, position)
    fig.tight_layout()
    return fig


@course_figure
def _widget_figure(table: dict, position: int):
    fig, ax = new_figure(_size(table))
    draw_lens_table(fig, ax, table, position)
    fig.tight_layout()
    return fig


def lens_table_widget(model, tokenizer, prompts: Sequence[str]) -> widgets.VBox:
    """The widget over ``prompts`` (their tables computed now); it starts at the first prompt's last position."""
    tables = lens_tables(model, tokenizer, prompts)

    def _positions(prompt: str) -> list[tuple[str, int]]:
        return [(f"{i} {token!r}", i) for i, token in enumerate(tables[prompt]["tokens"])]

    first = next(iter(tables))
    prompt = widgets.Dropdown(options=[(repr(p), p) for p in tables], value=first, description="prompt",
                              layout=widgets.Layout(width="460px"))
    prompt.add_class("course-lens-prompt")
    position = widgets.Dropdown(options=_positions(first), value=len(tables[first]["tokens"]) - 1,
                                description="position")
    position.add_class("course-lens-position")
    readout, figure = readout_area(), figure_area()
    busy = {"switching prompt": False}

    def _redraw() -> None:
        if busy["switching prompt"]:
            return
        table = tables[prompt.value]
        readout.value = lens_readout(table, position.value)
        show_figure(figure, _widget_figure(table, position.value))

    def _switch_prompt(change) -> None:  # the new prompt's positions (at its last one), without a redraw per step
        with redraw_lock():
            busy["switching prompt"] = True
            try:
                position.options = _positions(change["new"])
                position.value = len(tables[change["new"]]["tokens"]) - 1
            finally:
                busy["switching prompt"] = False

    # observed before live_widget's own observer, which then redraws the whole new state once (traitlets calls
    # a trait's observers in the order they were registered)
    prompt.observe(_switch_prompt, names="value")
    return live_widget([widgets.HBox([prompt, position]), figure, readout], "course-lens", [prompt, position], _redraw)
