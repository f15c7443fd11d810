"""Notebook 13's figures: where a trained GPT writes a logit difference, and where patching restores it.

``plot_attribution(parts, labels)`` draws each head's and each MLP's direct part of a logit difference as bars;
``plot_patching_map(grid, tokens)`` draws a restored-fraction map (rows: the stream entering each block, the
last row the final stream; columns: positions, labelled by their tokens). No maths: the numbers come from
``course_utils.interp``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from course_utils.viz.style import course_figure


@course_figure
def plot_attribution(parts: dict):
    """Bars of the direct parts: ``parts`` as ``interp.direct_logit_attribution`` returns them (batch of one)."""
    heads, mlps = parts["heads"][0], parts["mlps"][0]  # (layer, head), (layer,)
    labels = [f"L{layer}H{h}" for layer in range(heads.shape[0]) for h in range(heads.shape[1])]
    labels += [f"MLP{layer}" for layer in range(mlps.shape[0])] + ["embed", "biases"]
    values = heads.flatten().tolist() + mlps.tolist()
    values += [float(parts["embed"][0]), float(parts["attn_bias"][0].sum() + parts["ln_bias"][0])]
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.bar(range(len(values)), values, color=["tab:blue"] * heads.numel() + ["tab:orange"] * len(mlps) + ["grey"] * 2)
    ax.set_xticks(range(len(values)), labels, rotation=90, fontsize=8)
    ax.axhline(0, color="black", lw=0.5)
    ax.set_ylabel("direct part (logits)")
    fig.tight_layout()
    return fig


def patching_rows(n_rows: int) -> list[str]:
    """The rows of a residual patching map:
    ``patching_rows(3)`` -> ``["into block 0", "into block 1", "final stream"]``."""
    return [f"into block {layer}" for layer in range(n_rows - 1)] + ["final stream"]


def token_label(token: str) -> str:
    """A token as a tick label: its repr without the quotes, so a newline shows as ``\\n`` and a space stays."""
    return repr(token)[1:-1]


@course_figure
def draw_patching_map(fig, ax, grid, rows: list[str], columns: list[str]):
    """Draw a map of restored fractions on ``ax`` (colour scale -1 .. 1, red for negative), with a colour bar."""
    image = ax.imshow(grid, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(columns)), columns, rotation=90, fontsize=8)
    ax.set_yticks(range(len(rows)), rows)
    fig.colorbar(image, ax=ax, label="restored fraction")
    return image


@course_figure
def plot_patching_map(grid, tokens: list[str]):
    """A (n_layers + 1, pos) map of restored fractions, one column per token of the corrupted prompt."""
    fig, ax = plt.subplots(figsize=(8, 3))
    draw_patching_map(fig, ax, grid, patching_rows(grid.shape[0]), [token_label(t) for t in tokens])
    fig.tight_layout()
    return fig
