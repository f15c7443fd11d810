"""Every course widget reads without a kernel: each notebook exported to HTML (nbconvert's lab
template, as nbviewer and `jupyter nbconvert --to html` make it) and opened in headless Chromium with
every request off this machine refused shows, for each widget cell, its static face: the starting
settings line, a readout, and (for a widget with a figure) the figure as a loaded, non-blank image.
No widget's Python repr (``VBox(children=(...``) appears anywhere."""

from __future__ import annotations

import base64
import json
import re

import pytest
from nbconvert import HTMLExporter

from browser.session import NOTEBOOKS
from browser.support import blank_reason

pytestmark = pytest.mark.timeout(600)

FACE = "course-static-face"


def _notebooks_with_faces() -> list[str]:
    return [p.name for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) if FACE in p.read_text()]


def _faces(path) -> list[str]:
    """The stored faces of a notebook, in order (the HTML text of each)."""
    out = []
    for cell in json.loads(path.read_text())["cells"]:
        for output in cell.get("outputs", []):
            html = "".join(output.get("data", {}).get("text/html", ""))
            if FACE in html:
                out.append(html)
    return out


def test_at_least_the_widget_notebooks_have_faces():
    # one widget or more in 00, 01, 03, 04, 05, 06, 07, 08, 09 (02 has none)
    assert len(_notebooks_with_faces()) >= 9


@pytest.mark.browser
@pytest.mark.parametrize("notebook", _notebooks_with_faces())
def test_exported_html_shows_every_widget_face(browser, notebook):
    # The export's script tags (require.js, MathJax, the widget renderer) point at empty data: scripts,
    # as for a reader offline; the page is set as content, so the shared context's request log (which
    # the other browser tests check for foreign hosts) sees no file: or internet address.
    empty = "data:text/javascript,"
    exporter = HTMLExporter(template_name="lab", require_js_url=empty, mathjax_url=empty, widget_renderer_url=empty)
    for name in ("jquery_url", "mermaid_js_url", "mermaid_layout_elk_js_url"):
        if exporter.has_trait(name):
            exporter.set_trait(name, empty)
    body, _ = exporter.from_filename(str(NOTEBOOKS / notebook))
    stored = _faces(NOTEBOOKS / notebook)

    page = browser.context.new_page()
    page.route(re.compile(r"^(?!data:|about:).*"), lambda route: route.abort())
    try:
        page.set_content(body, wait_until="load")
        faces = page.locator(f".{FACE}")
        assert faces.count() == len(stored), f"{notebook}: {faces.count()} faces drawn, {len(stored)} stored"
        assert "VBox(children=" not in page.inner_text("body") and "HBox(children=" not in page.inner_text("body")
        for index, html in enumerate(stored):
            face = faces.nth(index)
            face.scroll_into_view_if_needed()
            assert face.is_visible() and "shown as it starts" in face.inner_text()
            pngs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
            images = face.locator("img")
            assert images.count() == len(pngs)
            for k, png in enumerate(pngs):
                width = images.nth(k).evaluate("img => img.complete ? img.naturalWidth : 0")
                assert width > 0 and images.nth(k).bounding_box()["height"] > 50, f"{notebook} face {index}: not drawn"
                assert blank_reason(base64.b64decode(png)) is None, f"{notebook} face {index}: a blank figure"
    finally:
        page.close()
