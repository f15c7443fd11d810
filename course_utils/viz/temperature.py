"""Notebook 04's temperature widget: a log-scale temperature slider, a greedy toggle, top-k and top-p.

``temperature_widget(tokens, logits)`` -> a VBox showing the next-token probabilities as bars, the
share of N seeded samples that landed on each token beside them, the entropy, and a plain-text
readout. All the maths is ``course_utils.sampling`` and ``course_utils.entropy`` (via
``temperature_state``); the callback only reads the controls and redraws. The slider goes down to
T = 0.01 without overflow because the library shifts the logits by their maximum before dividing by
T; the greedy toggle is the explicit T = 0 branch. CSS classes follow notebooks' WIDGET_CONTRACT:
``course-temperature``, ``course-temperature-slider``, ``course-temperature-greedy``, ``course-topk``,
``course-topp``, ``course-readout``, ``course-figure``.
"""

from __future__ import annotations

from typing import Sequence

import ipywidgets as widgets
import torch

from course_utils import sampling
from course_utils.entropy import entropy
from course_utils.viz.drawing import new_figure, show_figure
from course_utils.viz.scaffold import figure_area, live_widget, readout_area
from course_utils.viz.style import course_figure

DEFAULT_TOKENS = ("CAT", "DOG", "IS", "LOVELY")
DEFAULT_LOGITS = (6.2, 4.9, 2.1, 1.0)


def temperature_state(
    logits: torch.Tensor,
    temperature: float,
    greedy: bool = False,
    top_k: int | None = None,
    top_p: float | None = None,
    n_samples: int = 1000,
    seed: int = 0,
) -> dict:
    """Everything the widget shows, computed by the library: probabilities, entropy, sample shares.

    ``temperature_state(torch.tensor([6.2, 4.9, 2.1, 1.0]), 1.0)["probs"]`` -> ``[0.772, 0.211, 0.013, 0.004]``.
    """
    t = 0.0 if greedy else temperature
    probs = sampling.next_token_distribution(logits, t, top_k, top_p)
    counts = sampling.sample_counts(probs, n_samples, torch.Generator().manual_seed(seed))
    return {
        "probs": probs,
        "entropy": float(entropy(probs)),
        "temperature": t,
        "greedy": greedy,
        "sample_share": sampling.sample_shares(counts),
        "n_samples": n_samples,
    }


def temperature_readout(tokens: Sequence[str], state: dict) -> str:
    """Plain lines: ``CAT: 0.772`` per token, then ``entropy: 0.607 nats`` and ``T = 1.000``."""
    lines = [f"{tok}: {p:.3f}" for tok, p in zip(tokens, state["probs"].tolist())]
    lines.append(f"entropy: {state['entropy']:.3f} nats")
    lines.append(f"T = {state['temperature']:.3f}" + (" (greedy)" if state["greedy"] else ""))
    return "<br>".join(lines)


@course_figure
def plot_temperature(tokens: Sequence[str], state: dict):
    """Bars of probabilities beside the share of samples drawn for each token."""
    fig, ax = new_figure((6, 3))
    xs = torch.arange(len(tokens)).numpy()
    ax.bar(xs - 0.2, state["probs"].double().numpy(), width=0.4, label="probability")
    ax.bar(xs + 0.2, state["sample_share"].numpy(), width=0.4, label=f"share of {state['n_samples']} samples")
    ax.set_xticks(xs, tokens)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("probability")
    title = "greedy (T → 0)" if state["greedy"] else f"T = {state['temperature']:.3g}"
    ax.set_title(f"{title}, entropy {state['entropy']:.3f} nats")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def temperature_widget(
    tokens: Sequence[str] = DEFAULT_TOKENS,
    logits: Sequence[float] | torch.Tensor = DEFAULT_LOGITS,
    n_samples: int = 1000,
    seed: int = 0,
) -> widgets.VBox:
    """The widget: temperature (log scale 0.01..10), greedy, top-k, top-p; bars, samples and readout."""
    logits = torch.as_tensor(logits, dtype=torch.float64)
    if logits.ndim != 1 or len(tokens) != logits.shape[0]:
        raise ValueError(f"need one logit per token: {len(tokens)} tokens, logits of shape {tuple(logits.shape)}")
    d_vocab = len(tokens)
    slider = widgets.FloatLogSlider(
        value=1.0, base=10, min=-2, max=1, step=0.01, description="T", continuous_update=False, readout_format=".3f"
    )
    slider.add_class("course-temperature-slider")
    greedy = widgets.Checkbox(value=False, description="greedy (T → 0)")
    greedy.add_class("course-temperature-greedy")
    top_k = widgets.IntSlider(value=d_vocab, min=1, max=d_vocab, description="top-k", continuous_update=False)
    top_k.add_class("course-topk")
    top_p = widgets.FloatSlider(value=1.0, min=0.01, max=1.0, step=0.01, description="top-p", continuous_update=False)
    top_p.add_class("course-topp")
    readout, figure = readout_area(), figure_area()

    def _redraw() -> None:
        state = temperature_state(logits, slider.value, greedy.value, top_k.value, top_p.value, n_samples, seed)
        readout.value = temperature_readout(tokens, state)
        slider.disabled = greedy.value
        show_figure(figure, plot_temperature(tokens, state))

    children = [widgets.HBox([slider, greedy]), widgets.HBox([top_k, top_p]), readout, figure]
    return live_widget(children, "course-temperature", [slider, greedy, top_k, top_p], _redraw)
