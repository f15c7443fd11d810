"""Notebook 07's plots and its usage widget: expert load over training, capacity and dropped tokens.

``plot_usage(runs)`` draws each run's expert shares over training (stacked, one colour per expert)
with its final loss; ``plot_specialisation(runs)`` the sub-task × expert tables; ``plot_final_losses(sweep)``
each seed's final loss per method;
``plot_capacity(report)`` one run's final load per expert against its capacity, the overflow in red.
``usage_widget(grid, x)`` chooses E, k and α among precomputed runs (``train_grid``) and a capacity
factor applied to the final router on fresh inputs ``x``: the callback only looks a run up and
calls ``capacity_report``; nothing trains inside it. CSS classes (WIDGET_CONTRACT): root
``course-moe-usage``, ``course-moe-experts``, ``course-moe-k``, ``course-moe-alpha``,
``course-moe-capacity``, ``course-readout``, ``course-figure``.
"""

from __future__ import annotations

import statistics
from typing import Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from course_utils.moe.balancing import max_entropy_bits, usage_entropy
from course_utils.moe.experiment import TrainingRun, capacity_report
from course_utils.viz.drawing import new_figure, show_figure
from course_utils.viz.scaffold import figure_area, live_widget, readout_area
from course_utils.viz.style import INK, course_figure

TITLES = {"none": "no balancing", "aux": "auxiliary loss", "bias": "bias balancing (DeepSeek-V3)"}


@course_figure
def draw_usage(ax, run: TrainingRun, title: str | None = None, legend: bool = False) -> None:
    """Stacked shares of the assignments per expert, step by step (a flat band = an even load);
    ``legend`` names the bands to the right of the axes (top band first)."""
    shares = run.shares.double().numpy()
    steps = range(1, shares.shape[0] + 1)
    colours = plt.get_cmap("tab10" if shares.shape[1] <= 10 else "tab20")
    ax.stackplot(
        steps,
        shares.T,
        colors=[colours(e) for e in range(shares.shape[1])],
        labels=[f"expert {e}" for e in range(shares.shape[1])],
    )
    ax.set_xlim(1, shares.shape[0])
    ax.set_ylim(0, 1)
    if legend:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=6, frameon=False, reverse=True)
    ax.set_xlabel("training step")
    ax.set_ylabel("share of assignments")
    ax.set_title(title or f"{TITLES.get(run.balancing, run.balancing)}\nfinal loss {run.eval_loss:.4f}", fontsize=9)


@course_figure
def plot_usage(runs: Mapping[str, TrainingRun]):
    """One panel per run, side by side."""
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 3.4), squeeze=False, sharey=True)
    for i, (ax, run) in enumerate(zip(axes[0], runs.values())):
        draw_usage(ax, run, legend=i == len(runs) - 1)
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


@course_figure
def plot_specialisation(runs: Mapping[str, TrainingRun]):
    """For each run, the share of each sub-task's assignments that each expert received."""
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 2.6), squeeze=False)
    for ax, run in zip(axes[0], runs.values()):
        table = run.specialisation.numpy()
        ax.imshow(table, vmin=0, vmax=1, cmap="Blues", aspect="auto")
        for i in range(table.shape[0]):
            for j in range(table.shape[1]):
                if table[i, j] >= 0.05:
                    ax.text(
                        j,
                        i,
                        f"{table[i, j]:.2f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if table[i, j] > 0.6 else "black",
                    )
        ax.set_xticks(range(table.shape[1]))
        ax.set_yticks(range(table.shape[0]), [f"sub-task {i}" for i in range(table.shape[0])])
        ax.set_xlabel("expert")
        ax.set_title(TITLES.get(run.balancing, run.balancing), fontsize=9)
    fig.tight_layout()
    return fig


@course_figure
def plot_final_losses(sweep: Mapping[int, Mapping[str, TrainingRun]]):
    """Each seed's final held-out loss under each method, one grey line a seed, the medians in black:
    the spread over seeds at a glance (``sweep`` as ``{seed: run_experiment(...)}``)."""
    names = list(TITLES)
    fig, ax = plt.subplots(figsize=(5.6, 3.2))
    for runs in sweep.values():
        ax.plot(range(len(names)), [runs[n].eval_loss for n in names], color=INK, alpha=0.3, marker="o", lw=1)
    medians = [statistics.median(runs[n].eval_loss for runs in sweep.values()) for n in names]
    ax.plot(range(len(names)), medians, color=INK, marker="_", markersize=28, lw=0, label="median")
    ax.set_xticks(range(len(names)), [TITLES[n].replace(" (", "\n(") for n in names], fontsize=8)
    ax.set_ylabel("final held-out loss")
    ax.set_title(f"{len(sweep)} seeds, one line each", fontsize=9)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


@course_figure
def draw_capacity(ax, report: dict) -> None:
    """Bars of the kept assignments per expert, the dropped ones stacked on top in red, capacity dashed."""
    kept, dropped = report["kept"].numpy(), report["dropped"].numpy()
    xs = range(len(kept))
    ax.bar(xs, kept, color="tab:blue", label="kept")
    ax.bar(xs, dropped, bottom=kept, color="tab:red", label="dropped (overflow)")
    if report["capacity"] is not None:
        ax.axhline(report["capacity"], color=INK, ls="--", lw=1, label=f"capacity {report['capacity']}")
    ax.set_xticks(list(xs))
    ax.set_xlabel("expert")
    ax.set_ylabel("assignments")
    ax.legend(fontsize=7)


@course_figure
def plot_capacity(report: dict, title: str = ""):
    """A static bar chart of one ``capacity_report``."""
    fig, ax = plt.subplots(figsize=(5, 3))
    draw_capacity(ax, report)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def usage_state(
    grid: Mapping[tuple, TrainingRun], x: torch.Tensor, n_experts: int, k: int, alpha: float, capacity_factor: float
) -> dict:
    """Everything the widget shows for one choice: the run and its ``capacity_report`` on ``x``."""
    run = grid[n_experts, k, alpha]
    report = capacity_report(run.model, x, capacity_factor)
    final = report["load"].double() / report["assignments"]
    return {
        "run": run,
        "report": report,
        "entropy": usage_entropy(final),
        "even_entropy": max_entropy_bits(n_experts),
        "max_share": float(final.max()),
        "n_experts": n_experts,
        "k": k,
        "alpha": alpha,
        "capacity_factor": capacity_factor,
    }


def usage_readout(state: dict) -> str:
    """Four short lines (the charts stay in view): the choice and capacity, the balance, each expert's
    load and drops side by side, the totals."""
    r = state["report"]
    lines = [
        f"E = {state['n_experts']}, k = {state['k']}, alpha = {state['alpha']}, "
        f"capacity factor = {state['capacity_factor']:.2f} · capacity: {r['capacity']} assignments per expert "
        f"· final loss: {state['run'].eval_loss:.4f}",
        f"usage entropy: {state['entropy']:.3f} bits (even: {state['even_entropy']:.3f}) "
        f"· largest share: {state['max_share']:.3f}",
        " · ".join(
            f"expert {e}: load {int(load)}, dropped {int(drop)}"
            for e, (load, drop) in enumerate(zip(r["load"], r["dropped"]))
        ),
        f"dropped: {r['total_dropped']} of {r['assignments']} assignments; "
        f"tokens with every choice dropped: {r['tokens_fully_dropped']}",
    ]
    return "<br>".join(lines)


@course_figure
def _draw_state(state: dict):
    fig, (left, right) = new_figure((9, 3.2), 1, 2)
    draw_usage(
        left,
        state["run"],
        f"E={state['n_experts']}, k={state['k']}, alpha={state['alpha']}: usage over training",
        legend=True,
    )
    draw_capacity(right, state["report"])
    right.set_title(f"final router, capacity factor {state['capacity_factor']:.2f}", fontsize=9)
    fig.tight_layout()
    return fig


def usage_widget(grid: Mapping[tuple, TrainingRun], x: torch.Tensor) -> widgets.VBox:
    """The widget: E, k and α choose a precomputed run; the capacity factor re-routes its final router."""
    Es = sorted({key[0] for key in grid})
    ks = sorted({key[1] for key in grid})
    alphas = sorted({key[2] for key in grid})
    experts = widgets.Dropdown(options=Es, value=Es[-1], description="E")
    experts.add_class("course-moe-experts")
    k = widgets.Dropdown(options=ks, value=ks[-1], description="k")
    k.add_class("course-moe-k")
    alpha = widgets.Dropdown(options=alphas, value=alphas[0], description="alpha")
    alpha.add_class("course-moe-alpha")
    capacity = widgets.FloatSlider(
        value=1.25, min=0.25, max=3.0, step=0.25, description="capacity", continuous_update=False, readout_format=".2f"
    )
    capacity.add_class("course-moe-capacity")
    readout, figure = readout_area(), figure_area()

    def _redraw() -> None:
        state = usage_state(grid, x, experts.value, k.value, alpha.value, capacity.value)
        readout.value = usage_readout(state)
        show_figure(figure, _draw_state(state))

    children = [widgets.HBox([experts, k, alpha]), capacity, figure, readout]  # the charts first, in view
    return live_widget(children, "course-moe-usage", [experts, k, alpha, capacity], _redraw)
