"""A notebook as an HTML page that reads offline, its mathematics typeset: ``export_html``.

``jupyter nbconvert --to html`` loads MathJax from a CDN, so a page opened without a network shows raw
LaTeX (``$\\sqrt{d_k}$``). ``export_html(notebook)`` makes the same page with nbconvert's lab template,
MathJax loaded from the disk (the MathJax 2 that the ``jupyter-server-mathjax`` package ships, as a
``file://`` URL) and told to draw with the STIX-Web fonts that package carries (it has no TeX fonts,
and with nbconvert's own settings symbols such as a prime end as "Math Processing Error").
``python -m course_utils.viz.offline_html notebooks/03_attention.ipynb`` -> ``notebooks/03_attention.html``.
Leaves out require.js and the widget renderer, which the page also asks the web for: without them the
course's widgets show their static faces (``viz/static_face.py``), as they do in any export.
"""

from __future__ import annotations

import argparse
from pathlib import Path

MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"  # the one combined configuration the package ships
TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_mathjax -%}
<script type="text/x-mathjax-config">
MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null}});
</script>
{{ super() }}
{%- endblock html_head_js_mathjax -%}
"""


def local_mathjax_url() -> str:
    """``file:///.../jupyter_server_mathjax/static/MathJax.js?config=...``: MathJax on this machine's disk."""
    import jupyter_server_mathjax

    script = Path(jupyter_server_mathjax.__file__).resolve().parent / "static" / "MathJax.js"
    if not script.is_file():
        raise FileNotFoundError(f"jupyter-server-mathjax has no MathJax.js at {script}: reinstall it")
    return f"{script.as_uri()}?config={MATHJAX_CONFIG}"


def export_html(notebook: str | Path, out: str | Path | None = None) -> Path:
    """Write ``notebook`` as HTML (to ``out``, default beside it with ``.html``) and return the path;
    ``ValueError`` for a path that is no ``.ipynb`` file."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    source = Path(notebook)
    if source.suffix != ".ipynb" or not source.is_file():
        raise ValueError(f"notebook must be an existing .ipynb file, got {str(notebook)!r}")
    target = Path(out) if out is not None else source.with_suffix(".html")
    exporter = HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"offline.html.j2": TEMPLATE})],
                            template_file="offline.html.j2", mathjax_url=local_mathjax_url())
    body, _ = exporter.from_filename(str(source))
    target.write_text(body, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course_utils.viz.offline_html", description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+", help="the .ipynb files to export")
    parser.add_argument("--out", help="the folder for the .html files (default: beside each notebook)")
    args = parser.parse_args(argv)
    for notebook in args.notebooks:
        out = None if args.out is None else Path(args.out) / Path(notebook).with_suffix(".html").name
        print(export_html(notebook, out))


if __name__ == "__main__":
    main()
