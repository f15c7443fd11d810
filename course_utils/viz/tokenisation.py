"""The tokenizer widget of notebook 01: type text, see it cut into coloured pieces with ids.

``tokenizer_widget(course_bpe)`` -> a VBox (CSS class ``course-tokenizer``) with a Textarea
(``course-tokenizer-text``), a Dropdown of tokenizers (``course-tokenizer-choice``: characters,
bytes, course BPE, GPT-2, cl100k_base, o200k_base) and an HTML readout (``course-readout``):
one ``<span class="course-token" title="id N">piece</span>`` per token, then the plain lines
``ids: [...]`` and ``tokens: N``. The callback only calls ``split_for_display``.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

from course_utils.tokenisation.course import CHOICES, split_for_display
from course_utils.viz.scaffold import live_widget, readout_area
from course_utils.viz.style import course_figure

PALETTE = ("#ffd6a5", "#caffbf", "#9bf6ff", "#bdb2ff", "#ffc6ff", "#fdffb6")


def render_pieces(pieces: list[tuple[str, int]]) -> str:
    """HTML for (piece, id) pairs:
    ``[("hi", 5)]`` -> ``'<div ...><span class="course-token" title="id 5" ...>hi</span>...'``."""
    spans = []
    for k, (piece, token_id) in enumerate(pieces):
        shown = html.escape(piece).replace("\n", "↵")
        spans.append(
            f'<span class="course-token" title="id {token_id}" '
            f'style="background:{PALETTE[k % len(PALETTE)]};white-space:pre;padding:1px 0;'
            f'border-right:1px solid #888">{shown}</span>'
        )
    ids = ", ".join(str(i) for _, i in pieces)
    return (
        f'<div style="font-family:monospace;line-height:1.9">{"".join(spans)}</div>'
        f"<div>ids: [{ids}]</div><div>tokens: {len(pieces)}</div>"
    )


def tokenizer_widget(
    course_bpe=None, text: str = "Tokenisation isn't magic: café, 😀, strawberry!", choice: str = "GPT-2"
) -> widgets.VBox:
    """The widget; ``course_bpe`` is the notebook's trained tokenizer (default: the cached one)."""
    box_text = widgets.Textarea(
        value=text, description="text", continuous_update=True, layout=widgets.Layout(width="95%")
    )
    box_text.add_class("course-tokenizer-text")
    dropdown = widgets.Dropdown(options=list(CHOICES), value=choice, description="tokenizer")
    dropdown.add_class("course-tokenizer-choice")
    readout = readout_area()

    def _update() -> None:
        readout.value = render_pieces(split_for_display(box_text.value, dropdown.value, course_bpe))

    return live_widget([box_text, dropdown, readout], "course-tokenizer", [box_text, dropdown], _update)


@course_figure
def plot_pruning(history):
    """Corpus log-likelihood against vocabulary size for ``unigram.prune``'s history (read right to
    left: pruning shrinks the vocabulary); removals of pieces no word used are drawn hollow."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    sizes = [r.size for r in history]
    lls = [r.log_likelihood for r in history]
    ax.plot(sizes, lls, color="#888", lw=1, zorder=1)
    unused = [r for r in history[1:] if r.removed and set(r.removed) <= set(r.unused)]
    used = [r for r in history[1:] if r not in unused]
    ax.scatter(
        [r.size for r in unused],
        [r.log_likelihood for r in unused],
        facecolors="none",
        edgecolors="tab:blue",
        label="removed a piece no word used",
        zorder=2,
    )
    ax.scatter(
        [r.size for r in used],
        [r.log_likelihood for r in used],
        color="tab:red",
        label="removed a piece in use",
        zorder=2,
    )
    for r in used:
        ax.annotate(
            " ".join(r.removed), (r.size, r.log_likelihood), textcoords="offset points", xytext=(4, 4), fontsize=8
        )
    ax.invert_xaxis()
    ax.set_xlabel("vocabulary size (pieces)")
    ax.set_ylabel("corpus log-likelihood")
    ax.set_title("Unigram pruning: free removals first, then each removal costs likelihood")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig
