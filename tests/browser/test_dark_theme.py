"""The course's figures in JupyterLab's dark theme and its light theme (issue #26: they were white boxes).

Switches the running JupyterLab to "JupyterLab Dark" with its own theme command, screenshots notebook 03's
figures (two static ones and the d_k viewer's) as the page shows them, and checks the grey ink of their
axes labels and tick labels against the page behind it (WCAG contrast >= 3, the floor for graphics and
large text), then does the same in the light theme. The style itself is ``course_utils/viz/style.py``;
its unit tests are tests/test_viz_style.py.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from browser.session import ARTIFACTS, ATTENTION
from browser.support import image_from_png, settle_images
from course_utils.viz.style import INK

pytestmark = pytest.mark.timeout(600)


def _luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG 2 relative luminance of sRGB colours in [0, 1] (last axis RGB)."""
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def label_contrast(png: bytes) -> tuple[float, float, float]:
    """(background luminance, share of ink pixels, WCAG contrast of ink and background) in the left fifth of a
    screenshot of a figure, where its y-axis label and tick labels are. Ink: pixels of the figure's grey (within
    0.08 of ``INK`` in every channel) as the page shows them; background: the strip's median colour."""
    image = image_from_png(png)[..., :3]
    strip = image[:, : max(4, image.shape[1] // 5)].reshape(-1, 3)
    background = float(_luminance(np.median(strip, axis=0)))
    ink = strip[np.abs(strip - np.array(to_rgb(INK))).max(axis=1) < 0.08]
    if not len(ink):
        return background, 0.0, 1.0
    fg = float(_luminance(ink.mean(axis=0)))
    return background, len(ink) / len(strip), (max(fg, background) + 0.05) / (min(fg, background) + 0.05)


def _set_theme(page, theme: str, light: bool) -> None:
    page.evaluate("theme => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme)
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{str(light).lower()}'")
    page.wait_for_timeout(500)  # the theme's stylesheet applies


def _figures(page):
    """Notebook 03's static figures, then the live d_k viewer's figure (drawn by a widget callback)."""
    panel = f"[id='{page.evaluate('() => window.jupyterapp.shell.currentWidget.id')}']"
    images = page.locator(f"{panel} .jp-OutputArea-output img")
    static = [images.nth(i) for i in range(images.count())
              if not images.nth(i).evaluate("img => !!img.closest('.jupyter-widgets, .course-static-face')")]
    viewer = page.locator(f"{panel} .course-attention-viewer").filter(has=page.locator(".course-dk")).first
    return static + [viewer.locator(".course-figure img").first]


@pytest.mark.browser
def test_figures_read_in_the_dark_and_the_light_theme(browser):
    page = browser.notebook(ATTENTION)
    figures = _figures(page)
    assert len(figures) >= 3, "notebook 03 should show its attention-pattern and saturation figures and the viewer"
    try:
        for theme, light in (("JupyterLab Dark", False), ("JupyterLab Light", True)):
            _set_theme(page, theme, light)
            for i, figure in enumerate(figures):
                figure.scroll_into_view_if_needed()
                settle_images(figure)
                assert not figure.evaluate("img => img.classList.contains('jp-needs-light-background')"), (
                    "JupyterLab paints a white box behind this figure (matplotlib-inline's needs_background)")
                png = figure.screenshot(path=str(ARTIFACTS / f"theme-{'light' if light else 'dark'}-figure{i}.png"))
                background, ink, contrast = label_contrast(png)
                where = f"{theme}, figure {i}: page behind it luminance {background:.3f}, ink {ink:.4f}"
                assert (background > 0.8) if light else (background < 0.05), f"{where}: a box of its own colour?"
                assert ink > 0.005, f"{where}: no grey axes labels in the left fifth"
                assert contrast >= 3.0, f"{where}: labels' contrast {contrast:.2f} < 3"
    finally:
        _set_theme(page, "JupyterLab Light", True)  # the other browser tests screenshot the light theme
    browser.assert_offline()



# --- the check itself can fail (fast, no browser) -------------------------------------------------


def _on_page(fig, page_colour: str) -> bytes:
    """``fig`` as the page shows it: its PNG composited over ``page_colour``."""
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    figure = Image.open(buffer).convert("RGBA")
    page = Image.new("RGBA", figure.size, page_colour)
    out = io.BytesIO()
    Image.alpha_composite(page, figure).save(out, format="PNG")
    return out.getvalue()


def test_label_contrast_passes_the_course_style_and_fails_a_white_box():
    from course_utils.viz.scaling import plot_scaling

    styled = plot_scaling([64, 128, 256], [0.01, 0.04, 0.16])
    white_box = plot_scaling.__wrapped__([64, 128, 256], [0.01, 0.04, 0.16])  # matplotlib's defaults
    background, ink, contrast = label_contrast(_on_page(styled, "#111111"))
    assert background < 0.05 and ink > 0.005 and contrast >= 3.0
    background, ink, contrast = label_contrast(_on_page(styled, "#ffffff"))
    assert background > 0.8 and ink > 0.005 and contrast >= 3.0
    background, ink, _ = label_contrast(_on_page(white_box, "#111111"))
    assert background > 0.8 and ink < 0.005  # a white box with black labels: both dark-theme assertions fail
