"""The course's plotting style (``course_utils.viz.style``) and the WᵀW colour bar of notebook 06's figures.

Every figure-building function of ``course_utils.viz`` is styled; a styled figure is transparent with
grey ink that matplotlib-inline asks no background for (JupyterLab would paint a white box behind it in
the dark theme otherwise); the style is gone once the figure is built. The browser side (the dark
theme in JupyterLab) is tests/browser/test_dark_theme.py.
"""

import importlib
import inspect
import io
import pkgutil

import matplotlib as mpl
import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba
from matplotlib_inline.backend_inline import _fetch_figure_metadata
from PIL import Image

import course_utils.viz
from course_utils.viz import mlp_superposition, parameter_counting
from course_utils.viz.style import COURSE_RC, INK, course_figure, course_style

MODULES = [
    importlib.import_module(m.name) for m in pkgutil.iter_modules(course_utils.viz.__path__, "course_utils.viz.")
]


def _relative_luminance(colour) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgba(colour)[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a, b) -> float:
    high, low = sorted((_relative_luminance(a), _relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_every_figure_builder_in_viz_is_styled():
    builders = {
        f"{module.__name__}.{name}": obj
        for module in MODULES
        for name, obj in vars(module).items()
        if name.startswith(("plot_", "draw_")) and inspect.isfunction(obj) and obj.__module__ == module.__name__
    }
    assert len(builders) >= 25, sorted(builders)
    unstyled = [name for name, build in builders.items() if not getattr(build, "course_styled", False)]
    assert not unstyled, f"build these figures under @course_figure: {unstyled}"


def test_ink_reads_on_the_light_and_the_dark_theme():
    # hand-worked: #7f7f7f has luminance 0.212; white 1.0 -> 1.05 / 0.262 = 4.0; #111111 0.0056 -> 0.262 / 0.0556 = 4.7
    assert _contrast(INK, "white") == pytest.approx(4.00, abs=0.01)
    assert _contrast(INK, "#111111") == pytest.approx(4.71, abs=0.01)
    assert _contrast("black", "#111111") < 1.2  # matplotlib's default ink, which the dark theme swallows


def test_the_style_holds_while_a_figure_is_built_and_is_gone_after():
    before = dict(mpl.rcParams)
    seen = course_figure(lambda: {key: mpl.rcParams[key] for key in COURSE_RC})()
    assert seen == {key: mpl.rcParams.validate[key](value) for key, value in COURSE_RC.items()}
    assert dict(mpl.rcParams) == before


@pytest.fixture(scope="module")
def toy_W():
    return torch.randn(3, 2, 5, generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def styled_figures(toy_W):
    state = parameter_counting.counter_state(**parameter_counting.START)
    return {
        "plot_counter (a new_figure)": parameter_counting.plot_counter(state),
        "plot_sparsity_grid (pyplot)": mlp_superposition.plot_sparsity_grid(toy_W, torch.tensor([0.0, 0.5, 0.9])),
    }


@pytest.mark.parametrize("name", ["plot_counter (a new_figure)", "plot_sparsity_grid (pyplot)"])
def test_a_styled_figure_is_transparent_with_grey_ink_and_asks_for_no_background(styled_figures, name):
    fig = styled_figures[name]
    assert not fig.patch.get_visible() and all(to_rgba(ax.get_facecolor())[3] == 0 for ax in fig.axes)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")  # outside the style, as the inline backend and show_figure do
    pixels = np.asarray(Image.open(buffer).convert("RGBA"))
    assert pixels[0, 0, 3] == 0 and pixels[-1, -1, 3] == 0, "the figure's corners should be transparent"
    labels = [label for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for label in axis.get_ticklabels()]
    assert labels and {to_rgba(label.get_color()) for label in labels} == {to_rgba(INK)}
    titles = [ax.title for ax in fig.axes if ax.get_title()] + [ax.yaxis.label for ax in fig.axes if ax.get_ylabel()]
    assert titles and all(to_rgba(t.get_color()) == to_rgba(INK) for t in titles)
    assert _fetch_figure_metadata(fig) is None  # no 'needs_background': JupyterLab paints nothing behind it


def test_unstyled_the_figure_is_a_white_box_and_a_transparent_face_colour_asks_for_one(toy_W):
    fig = mlp_superposition.plot_sparsity_grid.__wrapped__(toy_W, torch.tensor([0.0, 0.5, 0.9]))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    assert tuple(np.asarray(Image.open(buffer).convert("RGBA"))[0, 0]) == (255, 255, 255, 255)
    assert {to_rgba(label.get_color()) for ax in fig.axes for label in ax.yaxis.get_ticklabels()} == {to_rgba("black")}
    fig.patch.set_facecolor("none")  # transparent by its face colour instead of a hidden patch:
    assert _fetch_figure_metadata(fig) == {"needs_background": "light"}  # JupyterLab's white box behind it


@pytest.mark.parametrize("build", ["grid", "instance"])
def test_the_interference_heatmap_has_a_symmetric_colour_bar(toy_W, styled_figures, build):
    if build == "grid":
        fig, W = styled_figures["plot_sparsity_grid (pyplot)"], toy_W
    else:
        fig, W = mlp_superposition.plot_instance(toy_W[1], 0.5), toy_W[1]
    images = [image for ax in fig.axes for image in ax.images]
    bars = {id(image.colorbar): image.colorbar for image in images if image.colorbar is not None}
    assert len(bars) == 1, "one colour bar for the WᵀW panels"
    (bar,) = bars.values()
    limit = float((W.transpose(-1, -2) @ W).abs().max())
    assert bar.vmin == pytest.approx(-limit) and bar.vmax == pytest.approx(limit)
    assert all(image.get_clim() == pytest.approx((-limit, limit)) for image in images)
    assert bar.ax.get_ylabel() == r"$W_i^\top W_j$"


def test_interactive_mode_switched_on_inside_the_style_stays_on():
    """In a kernel the first pyplot figure loads the inline backend, which calls ``mpl.interactive(True)``;
    if the style's rc restore undid that, no later figure of the notebook would be shown."""
    was = mpl.is_interactive()
    try:
        mpl.interactive(False)
        with course_style():
            mpl.interactive(True)  # what the backend does when it loads inside the block
        assert mpl.is_interactive()
    finally:
        mpl.interactive(was)


def test_every_figure_a_notebook_draws_itself_is_styled():
    """A notebook cell that makes its own figure (plt.subplots / plt.figure) does so inside `with course_style():`,
    so no figure of the course is a white box in the dark theme (07's static MoE picture once was)."""
    import ast
    from pathlib import Path

    def makes_figure(node):
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("subplots", "figure") and getattr(node.func.value, "id", None) == "plt")

    unstyled = []
    for source in sorted(Path(__file__).resolve().parents[1].glob("notebooks/src/[0-9][0-9]_*.py")):
        tree = ast.parse(source.read_text())
        styled = {id(n) for w in ast.walk(tree) if isinstance(w, ast.With)
                  and any("course_style" in ast.unparse(item.context_expr) for item in w.items)
                  for n in ast.walk(w)}
        unstyled += [f"{source.name}:{n.lineno}" for n in ast.walk(tree) if makes_figure(n) and id(n) not in styled]
    assert not unstyled, f"figures drawn outside `with course_style():` {unstyled}"
