"""Notebook 08's figures and its parameter-counter widget.

``figure_image(fig)`` shows a figure in an ordinary cell; ``plot_budget_shares(counts)`` draws
a model's parameter budget as one stacked bar (GPT-3: embedding,
attention, MLP, unembedding); ``plot_models(rows)`` compares total and active parameters of several
models; ``plot_decode_intensity(curves, ridges)`` draws a decode step's FLOPs per byte against the
batch beside accelerators' ridge points; ``counter_widget()`` has sliders for d_model, layers,
heads, KV heads, vocabulary, context, experts and k and shows the live parameter and FLOP
breakdown as bars with a plain-text readout.
All the maths is ``course_utils.counting.parameters`` / ``course_utils.counting.compute`` (via ``counter_state``); a
setting the counter refuses (d_model not divisible by n_heads, k > experts...) shows the library's
error as a ``WARNING`` line. CSS classes (WIDGET_CONTRACT.md): ``course-counter``,
``course-counter-<field>`` per slider, ``course-counter-style``, ``course-readout``, ``course-figure``.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable

import ipywidgets as widgets
from IPython.display import Image

from course_utils.counting import compute, parameters as counting
from course_utils.counting.parameters import ModelConfig
from course_utils.viz.drawing import human_count, new_figure, show_figure
from course_utils.viz.scaffold import figure_area, live_widget, readout_area
from course_utils.viz.style import INK, course_figure

GROUP_COLOURS = {
    "embedding": "#4c72b0",
    "attention": "#dd8452",
    "mlp": "#55a868",
    "unembedding": "#8172b3",
    "norms": "#937860",
}
STYLES = {  # architecture options the widget offers; d_mlp is a multiple of d_model
    "GPT-2 (GELU, LayerNorm, learned positions, tied)": ({}, 4.0),
    "Llama (SwiGLU, RMSNorm, rotary, untied, no biases)": (
        {"mlp": "swiglu", "norm": "rmsnorm", "positions": "rotary", "tie_embeddings": False, "bias": False},
        3.5,
    ),
}


def log_stops(low: int, high: int, real: Iterable[int] = ()) -> list[int]:
    """A slider's stops from ``low`` to ``high``, two per doubling (2^k and 3·2^k), so evenly spaced on a log
    scale; each of ``real`` (a real model's size) replaces the stop nearest to it on that scale.

    ``log_stops(1, 16)`` -> ``[1, 2, 3, 4, 6, 8, 12, 16]``;
    ``log_stops(256, 1024, [1000])`` -> ``[256, 384, 512, 768, 1000]``.
    """
    if not (isinstance(low, int) and isinstance(high, int)) or low < 1 or high <= low:
        raise ValueError(f"need integers 1 <= low < high, got low={low!r}, high={high!r}")
    stops = sorted({m << k for k in range(high.bit_length()) for m in (1, 3) if low <= m << k <= high})
    for size in real:
        if not low <= size <= high:
            raise ValueError(f"real size {size} is outside low..high = {low}..{high}")
        nearest = min(range(len(stops)), key=lambda i: abs(math.log(stops[i] / size)))
        if stops[nearest] in real and stops[nearest] != size:
            raise ValueError(f"real sizes {stops[nearest]} and {size} would share one stop")
        stops[nearest] = size
    return stops


SLIDERS = {  # field: (stops, start); a range that spans orders of magnitude is log-spaced. The start is GPT-2 small.
    "d_model": (log_stops(64, 16384), 768),
    "n_layers": (log_stops(1, 128), 12),
    "n_heads": (log_stops(1, 128), 12),
    "n_kv_heads": (log_stops(1, 128), 12),
    "d_vocab": (log_stops(256, 262144, real=(32000, 50257, 128256)), 50257),  # Llama 2, GPT-2, Llama 3
    "n_ctx": (log_stops(128, 131072), 1024),
    "n_experts": (log_stops(1, 64), 1),
    "experts_per_token": (list(range(1, 9)), 1),  # a short range: every value
}
START = {field: start for field, (_, start) in SLIDERS.items()}  # GPT-2 small, the counter's first picture


def figure_image(fig) -> Image:
    """A figure as a PNG for a notebook cell's output (figures from ``new_figure`` are unknown to pyplot)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.get_dpi())
    return Image(data=buffer.getvalue(), format="png")


@course_figure
def plot_budget_shares(counts: dict[str, int], title: str = ""):
    """One horizontal stacked bar of ``group_counts(counts)`` as percentages of the total."""
    groups = {k: v for k, v in counting.group_counts(counts).items() if v}
    fig, ax = new_figure((8, 2.4))
    left = 0.0
    for name, n in groups.items():
        share = 100 * n / counts["total"]
        ax.barh([0], [share], left=left, color=GROUP_COLOURS[name], label=f"{name} {share:.2f}%")
        left += share
    ax.set_xlim(0, 100)
    ax.set_yticks([])
    ax.set_xlabel("share of all parameters (%)")
    ax.set_title(title)
    ax.legend(ncol=len(groups), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.6), frameon=False)
    fig.subplots_adjust(left=0.03, right=0.97, top=0.85, bottom=0.5)
    return fig


@course_figure
def plot_decode_intensity(curves: dict[str, list[tuple[int, float]]], ridges: dict[str, float]):
    """FLOPs per byte of a decode step against the batch (log-log), with accelerators' ridge points.

    ``curves = {label: [(batch, intensity), ...]}`` (from ``decoding.decode_step``); ``ridges =
    {accelerator: flops_per_byte}`` as dashed lines: below a line the step waits on memory.
    """
    fig, ax = new_figure((7, 3.4))
    for label, points in curves.items():
        ax.plot([b for b, _ in points], [i for _, i in points], marker="o", label=label)
    for (name, ridge), style in zip(ridges.items(), ("--", ":")):
        ax.axhline(ridge, color="grey", linestyle=style, label=f"{name}: {ridge:.0f} FLOPs/byte")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequences decoded together (batch)")
    ax.set_ylabel("FLOPs per byte read")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@course_figure
def plot_models(rows: dict[str, tuple[int, int]]):
    """Bars of total and active parameters per model (log scale): ``rows = {name: (total, active)}``."""
    fig, ax = new_figure((8, 3.2))
    xs = range(len(rows))
    totals, actives = zip(*rows.values())
    ax.bar([x - 0.2 for x in xs], totals, width=0.4, label="total (capacity)")
    ax.bar([x + 0.2 for x in xs], actives, width=0.4, label="active per token (cost)")
    ax.set_xticks(list(xs), list(rows), rotation=20, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("parameters")
    ax.yaxis.set_major_formatter(human_count)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def counter_state(style: str = next(iter(STYLES)), **sizes: int) -> dict:
    """Config, counts, active counts, FLOPs per token at n_ctx and KV cache: or the library's error.

    ``counter_state(d_model=768, n_layers=12, n_heads=12, n_kv_heads=12, d_vocab=50257, n_ctx=1024,
    n_experts=1, experts_per_token=1)["counts"]["total"]`` -> 124,439,808.
    """
    options, width = STYLES[style]
    try:
        cfg = ModelConfig(**sizes, d_mlp=max(1, round(width * sizes.get("d_model", 1))), **options)
    except (ValueError, TypeError) as error:
        return {"error": str(error)}
    return {
        "cfg": cfg,
        "counts": counting.count_parameters(cfg),
        "active": counting.active_parameters(cfg),
        "flops": compute.forward_flops(cfg, cfg.n_ctx),
        "kv_bytes": compute.kv_cache_bytes_per_token(cfg),
    }


def counter_readout(state: dict) -> str:
    """Plain lines: ``total parameters: 124,439,808``, ``active parameters: ...``, one per group, FLOPs, KV cache."""
    if "error" in state:
        return f"WARNING: {state['error']}"
    lines = [f"total parameters: {state['counts']['total']:,}", f"active parameters: {state['active']['total']:,}"]
    lines += [f"{name}: {n:,}" for name, n in counting.group_counts(state["counts"]).items()]
    seq = state["cfg"].n_ctx
    lines.append(f"forward FLOPs per token at {seq:,} tokens: {state['flops']['total'] / seq:.4g}")
    lines.append(f"KV cache per token (bf16): {state['kv_bytes']:,} bytes")
    return "<br>".join(lines)


@course_figure
def plot_counter(state: dict):
    """Parameters per group (total and active) beside FLOPs per token (weights vs attention)."""
    fig, (left, right) = new_figure((9, 3.2), 1, 2)
    if "error" in state:
        message = "no model:\n" + state["error"].replace(" must", "\nmust")
        for ax, title in ((left, "parameters"), (right, "FLOPs per token")):
            ax.set_facecolor("#fde2dc")  # a pale warning panel where the bars would be
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(title, fontsize=9)
            ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=10, color="#9b1c1c", transform=ax.transAxes)
        return fig
    total, active = counting.group_counts(state["counts"]), counting.group_counts(state["active"])
    xs = range(len(total))
    left.bar(
        [x - 0.2 for x in xs], list(total.values()), width=0.4, label="total", color=[GROUP_COLOURS[g] for g in total]
    )
    left.bar(
        [x + 0.2 for x in xs], list(active.values()), width=0.4, label="active", color="#cccccc", edgecolor=INK
    )
    left.set_xticks(list(xs), list(total), fontsize=8)
    left.set_ylabel("parameters")
    left.yaxis.set_major_formatter(human_count)
    left.set_title(f"{state['counts']['total']:,} parameters", fontsize=9)
    left.legend(fontsize=8)
    seq, flops = state["cfg"].n_ctx, state["flops"]
    right.bar(
        ["weights", "attention"], [flops["weights"] / seq, flops["attention"] / seq], color=["#55a868", "#dd8452"]
    )
    right.set_title(f"forward FLOPs per token ({seq:,} tokens)", fontsize=9)
    right.yaxis.set_major_formatter(human_count)
    fig.tight_layout()
    return fig


def counter_widget() -> widgets.VBox:
    """The widget: eight integer sliders and an architecture choice -> live breakdown and readout."""
    sliders = {}
    for field, (stops, start) in SLIDERS.items():  # a handle's place is its stop's rank: log-scaled values
        slider = widgets.SelectionSlider(
            options=[(f"{v:,}", v) for v in stops],
            value=start,
            description=field,
            continuous_update=False,
            style={"description_width": "120px"},
        )
        slider.add_class(f"course-counter-{field.replace('_', '-')}")
        sliders[field] = slider
    style = widgets.Dropdown(
        options=list(STYLES),
        description="architecture",
        style={"description_width": "120px"},  # the sliders' label width: the label is never cut off
        layout=widgets.Layout(width="560px"),  # wide enough for the longest option
    )
    style.add_class("course-counter-style")
    readout, figure = readout_area(), figure_area()

    def _redraw() -> None:
        state = counter_state(style.value, **{field: s.value for field, s in sliders.items()})
        readout.value = counter_readout(state)
        show_figure(figure, plot_counter(state))

    columns = list(sliders.values())
    children = [style, widgets.HBox([widgets.VBox(columns[:4]), widgets.VBox(columns[4:])]), readout, figure]
    return live_widget(children, "course-counter", [*columns, style], _redraw)
