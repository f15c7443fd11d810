"""The browser harness's own checks can fail (fast, no browser).

Runs in JupyterLab on 127.0.0.1 driven by headless Chromium; fixtures in tests/browser/conftest.py.
"""

from __future__ import annotations


import pytest

from browser.oracles import entropy_nats, reheat
from browser.readouts import (
    parse_entropy,
    parse_probabilities,
    pattern_rows,
    temperature_of,
)
from browser.support import (
    RequestLog,
    blank_reason,
    images_differ,
)

pytestmark = pytest.mark.timeout(600)



def _png_of(draw) -> bytes:
    """A small PNG drawn by ``draw(ax)`` (no pyplot, so no global matplotlib state is touched)."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2))
    FigureCanvasAgg(fig)
    draw(fig.subplots())
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def test_blank_check_flags_an_empty_figure_and_passes_a_chart():
    empty = _png_of(lambda ax: ax.axis("off"))
    chart = _png_of(lambda ax: ax.bar(["a", "b"], [0.7, 0.3]))
    assert blank_reason(empty) is not None
    assert blank_reason(chart) is None
    assert images_differ(empty, chart) and not images_differ(chart, chart)


def test_request_log_flags_every_host_but_the_loopback():
    class Request:
        def __init__(self, url):
            self.url = url

    log = RequestLog()
    local = ["http://127.0.0.1:8888/lab", "ws://localhost:9/api/kernels", "data:image/png;base64,AA", "blob:x"]
    foreign = ["https://jupyterlab.github.io/assets/feed.xml", "https://pypi.org/pypi/x/json",
               "http://127.0.0.1.example.com/"]
    for url in local + foreign:
        log(Request(url))
    assert log.foreign() == foreign


def test_parsers_read_the_contract_format():
    text = "cat: 0.700\ndog: 0.300\nentropy: 0.611 nats\nT = 1.000"
    assert parse_probabilities(text) == {"cat": 0.7, "dog": 0.3}
    assert parse_entropy(text) == 0.611 and temperature_of(text) == 1.0
    assert entropy_nats([0.7, 0.3]) == pytest.approx(0.6109, abs=1e-4)
    assert reheat([0.5, 0.5], 0.1) == pytest.approx([0.5, 0.5])
    assert reheat([0.8, 0.2], 0.5) == pytest.approx([0.64 / 0.68, 0.04 / 0.68])
    assert pattern_rows("q0: 1.000 0.000\nq1: 0.250 0.750\nWARNING: x 1.000 2.000", 2) == [[1.0, 0.0], [0.25, 0.75]]
