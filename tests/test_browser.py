"""The widgets, tested for real: JupyterLab on 127.0.0.1 driven by headless Chromium (Playwright).

One JupyterLab server (serving a temporary copy of notebooks/) and one browser are shared by all
tests; each notebook is opened and run once. The widgets are found by the CSS classes promised in
the widget contract (course-readout, course-figure, ...). Screenshots go to test-artifacts/browser/.
Skipped, with the reason, when /usr/bin/chromium (or playwright) is missing.
"""

from __future__ import annotations

import math
import re
import time

import pytest

from browser.oracles import entropy_nats, reheat, tiktoken_encoding, two_logit_softmax
from browser.readouts import (
    assert_no_nan,
    attended_weights,
    dk_of,
    dk_stats,
    parse_entropy,
    parse_probabilities,
    pattern_rows,
    temperature_of,
    welcome_probs,
)
from browser.session import (
    ATTENTION,
    MASKING,
    MULTIHEAD,
    NOTEBOOK_OF_TEST,
    TOKENISATION,
    WELCOME,
    assert_figures_not_blank,
    assert_output_images_not_blank,
    choose_option,
    figure_png,
    screenshot,
    type_slider_value,
    wait_for_new_figure,
    wait_for_readout,
    wait_kernel_idle,
)
from browser_support import (
    RequestLog,
    blank_reason,
    images_differ,
    readout_text,
)

pytestmark = pytest.mark.timeout(600)

# --- the welcome slider (proves widgets render at all) -------------------------------------------


@pytest.mark.browser
def test_welcome_slider_renders_and_reacts(browser):
    page = browser.notebook(WELCOME)
    root = page.locator(".course-welcome").first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout")
    gap, p0, p1 = welcome_probs(readout_text(readout))
    assert (p0, p1) == pytest.approx(two_logit_softmax(gap), abs=1e-3)

    handle = root.locator(".course-welcome-slider .noUi-handle")
    handle.focus()
    handle.press("End")  # keyboard: jump to the maximum gap (10)
    text = wait_for_readout(readout, lambda t: welcome_probs(t)[0] == 10.0, "gap 10.000 after End")
    gap, p0, p1 = welcome_probs(text)
    assert (p0, p1) == pytest.approx(two_logit_softmax(gap), abs=1e-3)

    type_slider_value(page, root.locator(".course-welcome-slider"), "-1.5")
    text = wait_for_readout(readout, lambda t: welcome_probs(t)[0] == -1.5, "gap -1.500 after typing")
    assert welcome_probs(text)[1:] == pytest.approx(two_logit_softmax(-1.5), abs=1e-3)
    screenshot(page, "welcome")
    browser.assert_offline()


# --- temperature widget (notebook 04) -------------------------------------------------------------


def read_temperature_state(readout, what: str, predicate=lambda t: True) -> tuple[float, list[float], float, str]:
    """Wait for a readout satisfying ``predicate``; return (T, probabilities, entropy, text)."""
    text = wait_for_readout(
        readout, lambda t: bool(re.search(r"T\s*=\s*\d", t)) and predicate(t), what)
    assert_no_nan(text, "temperature widget")
    probs = list(parse_probabilities(text).values())
    assert len(probs) >= 2, f"expected one 'TOKEN: 0.123' line per token, got:\n{text}"
    assert sum(probs) == pytest.approx(1.0, abs=0.001 * len(probs) + 1e-9), f"probabilities do not sum to 1:\n{text}"
    entropy = parse_entropy(text)
    assert entropy == pytest.approx(entropy_nats(probs), abs=0.01 + 0.005 * len(probs)), (
        f"shown entropy {entropy} disagrees with -sum p ln p of the shown probabilities:\n{text}")
    return temperature_of(text), probs, entropy, text


@pytest.mark.browser
def test_temperature_slider_sharpens_and_flattens(browser):
    page = browser.notebook(MASKING)
    root = page.locator(".course-temperature").first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout").first
    slider = root.locator(".course-temperature-slider")
    handle = slider.locator(".noUi-handle")
    assert_figures_not_blank(page, root, "temperature-initial")  # the first chart must not be blank

    if temperature_of(readout_text(readout)) != 1.0:  # another test moved it: type T = 1 back
        type_slider_value(page, slider, "1")
    t1, p1, h1, text1 = read_temperature_state(readout, "T = 1.000 (the default)",
                                               lambda t: temperature_of(t) == 1.0)
    figure_at_1 = figure_png(root)
    top = max(range(len(p1)), key=p1.__getitem__)
    oracle_ok = min(p1) >= 0.01  # p ** (1/T) is only accurate from 3-decimal p when no p is tiny

    # keyboard: five steps down from T = 1 lowers T a little -> sharper
    handle.focus()
    for _ in range(5):  # one step at a time (rapid input is test_rapid_input_...)
        handle.press("ArrowLeft")
        wait_kernel_idle(page)
    t_key, p_key, h_key, _ = read_temperature_state(readout, "a lower T after ArrowLeft x5",
                                                    lambda t: temperature_of(t) < 1.0)
    assert h_key <= h1 and p_key[top] >= p1[top], f"T={t_key}: not sharper than at T=1 ({p_key} vs {p1})"
    if oracle_ok:
        assert p_key == pytest.approx(reheat(p1, t_key), abs=0.01)

    # keyboard: Home = the minimum, T = 0.01 -> (almost) all mass on the top token
    handle.press("Home")
    t_low, p_low, h_low, _ = read_temperature_state(readout, "T = 0.010 after Home",
                                                    lambda t: temperature_of(t) == 0.01)
    assert h_low <= h_key and p_low[top] >= p_key[top] and p_low[top] == max(p_low)
    if oracle_ok:
        assert p_low == pytest.approx(reheat(p1, t_low), abs=0.01)
    if p_low != p1:
        wait_for_new_figure(root, figure_at_1, "moving T from 1 to 0.01")
    screenshot(page, "temperature-low")

    # typed value: T = 5 -> flatter than at T = 1
    type_slider_value(page, slider, "5")
    t_hot, p_hot, h_hot, _ = read_temperature_state(readout, "T = 5.000 after typing 5",
                                                    lambda t: temperature_of(t) == 5.0)
    assert h_hot > h1 and p_hot[top] < p1[top], f"T=5 is not flatter than T=1 ({p_hot} vs {p1})"
    if oracle_ok:
        assert p_hot == pytest.approx(reheat(p1, 5.0), abs=0.01)
    handle.focus()
    handle.press("End")
    _, p_max, h_max, _ = read_temperature_state(readout, "T = 10.000 after End",
                                                lambda t: temperature_of(t) == 10.0)
    assert h_max >= h_hot and h_max <= math.log(len(p_max)) + 0.01
    screenshot(page, "temperature-high")

    # greedy: all mass on the most likely token whatever the temperature
    greedy = root.locator(".course-temperature-greedy")
    toggle = greedy if greedy.evaluate("e => e.tagName") == "BUTTON" else greedy.locator("input, button").first
    toggle.click()
    _, p_greedy, h_greedy, _ = read_temperature_state(
        readout, "a one-hot distribution after the greedy toggle",
        lambda t: max(parse_probabilities(t).values() or [0]) == 1.0)
    assert p_greedy[top] == 1.0 and h_greedy == pytest.approx(0.0, abs=1e-3)
    toggle.click()
    read_temperature_state(readout, "the T = 10 distribution again after greedy off",
                           lambda t: max(parse_probabilities(t).values() or [1]) < 1.0)
    assert_figures_not_blank(page, root, "temperature-after")
    browser.assert_offline()


# --- mask editor (notebook 04) ----------------------------------------------------------------


def mask_cell_labels(cells) -> list[tuple[int, int]]:
    """(query, key) of each .course-mask-cell, read from its text or tooltip 'q{i} k{j}'."""
    labels = cells.evaluate_all(
        "els => els.map(e => (e.getAttribute('title') || '') + ' | ' + (e.textContent || ''))")
    out = []
    for label in labels:
        match = re.search(r"q\s*(\d+)\D+?k\s*(\d+)", label)
        assert match, f"mask cell without a 'q{{i}} k{{j}}' description or tooltip: {label!r}"
        out.append((int(match.group(1)), int(match.group(2))))
    return out


def check_pattern(text: str, n_queries: int, n_keys: int, allowed: dict) -> list[list[float]]:
    """Rows are probabilities over allowed keys only; a fully masked row is all zero with a WARNING."""
    assert_no_nan(text, "mask editor")
    rows = pattern_rows(text, n_keys)
    assert len(rows) == n_queries, f"expected {n_queries} rows of {n_keys} numbers in the readout:\n{text}"
    for i, row in enumerate(rows):
        if any(allowed[i, j] for j in range(n_keys)):
            assert sum(row) == pytest.approx(1.0, abs=0.001 * n_keys + 1e-9), f"row {i} does not sum to 1:\n{text}"
        else:
            assert sum(row) == 0.0, f"fully masked row {i} should be all zeros:\n{text}"
            assert re.search(rf"WARNING: fully masked row.*(?<!\d){i}(?!\d)", text), f"no WARNING naming row {i}:\n{text}"
        for j, value in enumerate(row):
            if not allowed[i, j]:
                assert value == 0.0, f"masked entry (q{i}, k{j}) has weight {value}:\n{text}"
    return rows


@pytest.mark.browser
def test_mask_editor_toggles_presets_and_never_shows_nan(browser):
    page = browser.notebook(MASKING)
    root = page.locator(".course-mask-editor").first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout").first
    cells = root.locator(".course-mask-cell")
    preset = root.locator(".course-mask-preset select")
    assert_figures_not_blank(page, root, "mask-initial")
    labels = mask_cell_labels(cells)
    n_queries = max(i for i, _ in labels) + 1
    n_keys = max(j for _, j in labels) + 1
    assert n_queries >= 2 and n_keys >= 2 and len(labels) == n_queries * n_keys

    def state() -> dict:
        active = cells.evaluate_all("els => els.map(e => e.classList.contains('mod-active'))")
        return dict(zip(labels, active))

    def change(action, what: str) -> str:
        before = readout_text(readout)
        action()
        text = wait_for_readout(readout, lambda t: t != before, what)
        wait_kernel_idle(page)  # a user-paced click: the redraw finishes before the next one
        return readout_text(readout)

    if not re.search("causal", preset.evaluate("s => s.options[s.selectedIndex].text"), re.IGNORECASE):
        change(lambda: choose_option(preset, r"^\s*all"), "a new pattern after preset 'all'")
        change(lambda: choose_option(preset, "causal"), "a new pattern after preset 'causal'")
    allowed = state()
    assert allowed == {(i, j): j <= i for i, j in labels}, "the causal preset does not show a causal mask"
    check_pattern(readout_text(readout), n_queries, n_keys, allowed)
    causal_figure = figure_png(root)

    # let query 0 also see key 1: its row changes and still sums to 1
    cell_01 = cells.nth(labels.index((0, 1)))
    text = change(cell_01.click, "a new pattern after toggling q0 k1 on")
    allowed = state()
    assert allowed[0, 1], "the q0 k1 button did not switch on"
    rows = check_pattern(text, n_queries, n_keys, allowed)
    assert rows[0][1] > 0.0

    # mask everything for query 0: zeros and a warning, never NaN
    cell_00 = cells.nth(labels.index((0, 0)))
    change(cell_00.click, "a new pattern after toggling q0 k0 off")
    text = change(cell_01.click, "a new pattern after toggling q0 k1 off")
    allowed = state()
    assert not any(allowed[0, j] for j in range(n_keys))
    check_pattern(text, n_queries, n_keys, allowed)
    wait_for_new_figure(root, causal_figure, "masking row 0 completely")
    screenshot(page, "mask-fully-masked-row")
    assert_figures_not_blank(page, root, "mask-fully-masked-row")

    # a different preset changes the pattern again
    text = change(lambda: choose_option(preset, "sliding"), "a new pattern after preset 'sliding window'")
    allowed = state()
    assert allowed != {(i, j): j <= i for i, j in labels}, "sliding window looks just like causal"
    check_pattern(text, n_queries, n_keys, allowed)
    assert_figures_not_blank(page, root, "mask-sliding")
    browser.assert_offline()


# --- rapid input: events arriving while a redraw is running ---------------------------------------


@pytest.mark.browser
def test_rapid_clicks_leave_a_drawn_figure(browser):
    """Two mask cells clicked ~50 ms apart (a quick user): the final figure is drawn, not blank,
    and the readout matches the final toggles. (ipykernel 7 may run the two callbacks on two
    threads at once; unserialised pyplot drawing then sends a blank PNG.)"""
    page = browser.notebook(MASKING)
    root = page.locator(".course-mask-editor").first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout").first
    cells = root.locator(".course-mask-cell")
    preset = root.locator(".course-mask-preset select")
    labels = mask_cell_labels(cells)
    n_queries, n_keys = max(i for i, _ in labels) + 1, max(j for _, j in labels) + 1
    choose_option(preset, "^all")
    wait_kernel_idle(page)
    choose_option(preset, "causal")
    wait_for_readout(readout, lambda t: len(pattern_rows(t, n_keys)) == n_queries and pattern_rows(t, n_keys)[0][1] == 0.0,
                     "the causal pattern")
    wait_kernel_idle(page)
    for i, j in [(0, 1), (1, 2), (0, 0)]:
        cells.nth(labels.index((i, j))).click()
        time.sleep(0.05)
    wait_kernel_idle(page, settle_s=1.0)
    active = cells.evaluate_all("els => els.map(e => e.classList.contains('mod-active'))")
    allowed = dict(zip(labels, active))
    expected = {(i, j): (j <= i) != ((i, j) in [(0, 1), (1, 2), (0, 0)]) for i, j in labels}
    assert allowed == expected, "the buttons do not show the three toggles"
    text = wait_for_readout(readout, lambda t: pattern_rows(t, n_keys)[0][1] > 0.0 and pattern_rows(t, n_keys)[0][0] == 0.0,
                            "the final pattern (q0 sees only k1) after three quick clicks", timeout_s=10)
    check_pattern(text, n_queries, n_keys, allowed)
    assert_figures_not_blank(page, root, "mask-rapid", timeout_s=5)
    browser.assert_offline()


@pytest.mark.browser
def test_rapid_slider_keys_leave_a_consistent_readout(browser):
    """Five ArrowRight presses in a row: the readout ends at the slider's T and the chart is drawn."""
    page = browser.notebook(MASKING)
    root = page.locator(".course-temperature").first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout").first
    slider = root.locator(".course-temperature-slider")
    type_slider_value(page, slider, "1")
    wait_for_readout(readout, lambda t: temperature_of(t) == 1.0, "T = 1.000 after typing 1")
    wait_kernel_idle(page)
    handle = slider.locator(".noUi-handle")
    handle.focus()
    for _ in range(5):
        handle.press("ArrowRight")
    wait_kernel_idle(page, settle_s=1.0)
    shown = float(slider.locator(".widget-readout").inner_text())
    assert shown > 1.0
    text = wait_for_readout(readout, lambda t: abs(temperature_of(t) - shown) < 0.006,
                            f"T = {shown} (the slider's value) after five quick key presses", timeout_s=10)
    read_temperature_state(readout, "a consistent readout")
    assert_figures_not_blank(page, root, "temperature-rapid", timeout_s=5)
    browser.assert_offline()


# --- attention viewers (notebooks 03 and 05) --------------------------------------------------------


@pytest.mark.browser
def test_dk_viewer_scaling_matters_only_for_large_dk(browser):
    page = browser.notebook(ATTENTION)
    root = page.locator(".course-attention-viewer").filter(has=page.locator(".course-dk")).first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout").first
    slider = root.locator(".course-dk")
    assert_figures_not_blank(page, root, "dk-initial")
    before = figure_png(root)

    # d_k = 1: dividing by sqrt(1) changes nothing, so both patterns have identical statistics
    type_slider_value(page, slider, "1")
    text = wait_for_readout(readout, lambda t: dk_of(t) == 1, "d_k = 1 after typing 1")
    assert_no_nan(text, "d_k viewer")
    stats = dk_stats(text)
    assert stats["scaled"] == stats["unscaled"], f"at d_k = 1 scaling is a no-op:\n{text}"
    wait_for_new_figure(root, before, "typing d_k = 1")

    # keyboard End -> the largest d_k: unscaled scores saturate (peakier, lower entropy)
    handle = slider.locator(".noUi-handle")
    handle.focus()
    handle.press("End")
    text = wait_for_readout(readout, lambda t: (dk_of(t) or 0) > 100, "a large d_k after End")
    stats = dk_stats(text)
    assert stats["unscaled"][0] > stats["scaled"][0] and stats["unscaled"][1] < stats["scaled"][1], (
        f"unscaled attention should saturate at large d_k:\n{text}")
    screenshot(page, "dk-viewer")
    assert_figures_not_blank(page, root, "dk-large")
    browser.assert_offline()


@pytest.mark.browser
def test_head_viewer_switches_heads_and_queries(browser):
    page = browser.notebook(MULTIHEAD)
    root = page.locator(".course-attention-viewer").filter(has=page.locator(".course-head")).first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout").first
    assert_figures_not_blank(page, root, "heads-initial")
    text = wait_for_readout(readout, lambda t: "layer 0 head 0" in t, "'layer 0 head 0' at start")
    weights = attended_weights(text)
    assert weights and sum(weights) == pytest.approx(1.0, abs=0.001 * len(weights) + 1e-9), text
    before = figure_png(root)

    head_select = root.locator(".course-head select")
    n_heads = head_select.locator("option").count()
    assert n_heads >= 2, "the head dropdown should offer several heads"
    choose_option(head_select, rf"head {n_heads - 1}$")
    text = wait_for_readout(readout, lambda t: f"head {n_heads - 1}" in t, f"head {n_heads - 1} after choosing it")
    assert_no_nan(text, "head viewer")
    assert sum(attended_weights(text)) == pytest.approx(1.0, abs=0.001 * len(weights) + 1e-9), text
    wait_for_new_figure(root, before, "choosing another head")

    layer_select = root.locator(".course-layer select")
    n_layers = layer_select.locator("option").count()
    if n_layers > 1:
        choose_option(layer_select, rf"layer {n_layers - 1}$")
        wait_for_readout(readout, lambda t: f"layer {n_layers - 1} head" in t, "the last layer after choosing it")
        wait_kernel_idle(page)  # user-paced; test_head_viewer_quick_inputs_... does it quickly

    # keyboard Home on the query slider: query 0 may only attend to itself (causal) -> weight 1
    handle = root.locator(".course-query .noUi-handle")
    handle.focus()
    handle.press("Home")
    text = wait_for_readout(readout, lambda t: "query q0 " in t, "query q0 after Home")
    assert attended_weights(text) == [1.0], f"the first query attends only to itself:\n{text}"
    screenshot(page, "head-viewer")
    assert_figures_not_blank(page, root, "heads-after")
    browser.assert_offline()


@pytest.mark.browser
def test_head_viewer_quick_inputs_leave_a_drawn_figure(browser):
    """Head, layer and query changed in quick succession, three times: the final heatmap is drawn
    and the readout shows the final choice. (With pyplot figures this failed 3 runs in 4: on JupyterLab
    4.6 + ipykernel 7, matplotlib-inline's flush_figures on a kernel subshell drew and closed the
    figure mid-draw; the widgets now build their figures outside pyplot.)"""
    page = browser.notebook(MULTIHEAD)
    root = page.locator(".course-attention-viewer").filter(has=page.locator(".course-head")).first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout").first
    head_select, layer_select = root.locator(".course-head select"), root.locator(".course-layer select")
    n_heads, n_layers = head_select.locator("option").count(), layer_select.locator("option").count()
    handle = root.locator(".course-query .noUi-handle")
    for round_ in range(3):
        head, layer = round_ % n_heads, (round_ + 1) % n_layers
        choose_option(head_select, rf"head {head}$")
        choose_option(layer_select, rf"layer {layer}$")
        handle.focus()
        handle.press("Home" if round_ % 2 == 0 else "End")
        text = wait_for_readout(readout, lambda t: f"layer {layer} head {head}" in t
                                and ("query q0 " in t) == (round_ % 2 == 0), f"layer {layer} head {head}")
        wait_kernel_idle(page)
        assert sum(attended_weights(text)) == pytest.approx(1.0, abs=0.01), text
        assert_figures_not_blank(page, root, f"heads-quick{round_}", timeout_s=3)
    browser.assert_offline()


# --- every figure in every notebook the tests open ---------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("notebook", sorted(set(NOTEBOOK_OF_TEST.values())))
def test_output_images_are_drawn(browser, notebook):
    """After Run All in JupyterLab, no output image (static matplotlib figure) is blank.

    (Figures inside widgets are checked by each widget's test, after it has used the widget.)"""
    page = browser.notebook(notebook)
    assert_output_images_not_blank(page, notebook)
    browser.assert_offline()


# --- tokenizer widget (notebook 01) ---------------------------------------------------------------

SAMPLE = "Hello world, tokenizers split 12345 cats."
VISIBLE_SPACE = str.maketrans({"·": " ", "␣": " ", "Ġ": " ", "▁": " ", "↵": "\n"})


@pytest.mark.browser
@pytest.mark.parametrize(("choice", "encoding"), [
    (r"gpt-?2", "gpt2"), (r"cl100k", "cl100k_base"), (r"o200k", "o200k_base")])
def test_tokenizer_widget_shows_tiktoken_pieces_and_ids(browser, choice, encoding, tmp_path):
    page = browser.notebook(TOKENISATION)
    oracle = tiktoken_encoding(encoding, tmp_path / "tiktoken-cache")
    expected = oracle.encode(SAMPLE)
    root = page.locator(".course-tokenizer").first
    root.scroll_into_view_if_needed()
    readout = root.locator(".course-readout").first
    text_box = root.locator(".course-tokenizer-text").locator("input, textarea").first
    label = choose_option(root.locator(".course-tokenizer-choice select"), choice)
    text_box.fill(SAMPLE)
    text_box.evaluate("e => e.blur()")  # commits the value when continuous_update is off

    def shown_ids(text: str) -> list[int] | None:
        match = re.search(r"ids:\s*\[([\d,\s]*)\]", text)
        return [int(x) for x in match.group(1).split(",") if x.strip()] if match else None

    text = wait_for_readout(readout, lambda t: shown_ids(t) == expected,
                            f"the {encoding} ids {expected} for {SAMPLE!r} ({label})")
    assert re.search(rf"tokens:\s*{len(expected)}\b", text), f"no 'tokens: {len(expected)}' line:\n{text}"
    tokens = readout.locator(".course-token")
    titles = tokens.evaluate_all("els => els.map(e => e.getAttribute('title'))")
    assert titles == [f"id {i}" for i in expected], f"token spans' titles {titles} != ids {expected}"
    pieces = [p.translate(VISIBLE_SPACE) for p in tokens.all_text_contents()]
    assert pieces == [oracle.decode([i]) for i in expected]
    screenshot(page, f"tokenizer-{encoding}")
    browser.assert_offline()


# --- the checks themselves can fail (fast, no browser) -------------------------------------------


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
