"""Notebook 12's figure: a Llama-style and a GPT-2-style model trained side by side over several seeds.

``plot_side_by_side(results)`` draws the validation curves of every seed (thin) and their mean (thick),
one colour per model, from ``llama.side_by_side.load_results()``. No maths beyond the mean.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from course_utils.viz.style import course_figure

LABELS = {"gpt2_style": "GPT-2-style", "llama_style": "Llama-style"}


@course_figure
def plot_side_by_side(results: dict):
    """Validation loss against step: each seed thin, the mean over seeds thick, one colour per model."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for (model, label), colour in zip(LABELS.items(), ("tab:blue", "tab:orange")):
        runs = [results["runs"][str(seed)][model] for seed in results["seeds"]]
        steps = runs[0]["eval_step"]
        for run in runs:
            ax.plot(steps, run["val_loss"], color=colour, lw=0.7, alpha=0.5)
        mean = [sum(values) / len(values) for values in zip(*(run["val_loss"] for run in runs))]
        ax.plot(steps, mean, "o-", color=colour, lw=2, label=f"{label}, mean of {len(runs)} seeds")
    ax.set_xlabel("step")
    ax.set_ylabel("validation loss (nats)")
    ax.legend()
    fig.tight_layout()
    return fig
