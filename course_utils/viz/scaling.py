"""Notebook 04's log-log plot of attention time against sequence length, with an n² guide line.

``plot_scaling(lengths, seconds)`` -> a figure; the exponent comes from
``course_utils.attention.scaling.fit_exponent``. Leaves out the measuring itself.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt

from course_utils.attention.scaling import fit_exponent
from course_utils.viz.style import course_figure


@course_figure
def plot_scaling(lengths: Sequence[int], seconds: Sequence[float]):
    """Measured times on log-log axes, the fitted exponent in the legend, and n² through the last point."""
    exponent = fit_exponent(lengths, seconds)
    guide = [seconds[-1] * (n / lengths[-1]) ** 2 for n in lengths]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.loglog(lengths, seconds, "o-", label=f"measured (fitted exponent {exponent:.2f})")
    ax.loglog(lengths, guide, "--", label="n² through the last point")
    ax.set_xticks(lengths, [f"{n:,}" for n in lengths])
    ax.tick_params(axis="x", which="minor", labelbottom=False)
    ax.set_xlabel("sequence length n_ctx")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
