"""Notebook 13's two widgets in a real browser (JupyterLab + headless Chromium): the patching explorer and the
logit-lens table.

The oracle is the library in this process, on the model the notebook reads in the browser's copy of the
notebooks (the course's checkpoint: the copy leaves out ``notebooks/student/``): the patching maps from
``interp.residual_patching_map`` / ``interp.head_patching_map`` on the notebook's two prompts, and the lens
from ``interp.lens_logits`` (a softmax and its maximum here, not the widget's ``lens_top_tokens``). The
kernel's numbers may differ from this process's in the last float32 bits, so probabilities and fractions are
compared to 0.002, and a top token only where it leads the runner-up by more than that.
"""

from __future__ import annotations

import ast
import re

import pytest
import torch

from browser.readouts import assert_no_nan, lens_cells, parse_fields
from browser.session import (
    assert_figures_not_blank,
    choose_option,
    figure_png,
    open_widget,
    screenshot,
    wait_for_new_figure,
    wait_for_readout,
    wait_kernel_idle,
)

pytestmark = pytest.mark.timeout(600)

NOTEBOOK = "13_inside_the_model.ipynb"
CLEAN_PROMPT = "YORK:\nI say, my lord of Y"  # the notebook's; its corrupted twin has "." three tokens from the end
TOLERANCE = 0.002


@pytest.fixture(scope="module")
def course():
    from course_utils.gpt.checkpoint import load_checkpoint

    ckpt = load_checkpoint()
    return ckpt["model"], ckpt["tokenizer"]


@pytest.fixture(scope="module")
def patching_oracle(course):
    from course_utils import interp

    model, tokenizer = course
    clean = torch.tensor([tokenizer.encode(CLEAN_PROMPT)])
    corrupted = clean.clone()
    corrupted[0, -3] = tokenizer.encode(".")[0]
    a, b = tokenizer.encode("or")[0], tokenizer.encode("ou")[0]
    return {
        "tokens": [tokenizer.decode([int(t)]) for t in corrupted[0]],
        "residual stream": interp.residual_patching_map(model, clean, corrupted, -1, a, b),
        "heads": interp.head_patching_map(model, clean, corrupted, -1, a, b),
    }


def _cell(text: str, oracle: dict) -> tuple[str, int, int, float]:
    """(map, row, column, fraction) of the explorer's readout, the row and column read back from their labels."""
    assert_no_nan(text, "patching explorer")
    fields = parse_fields(text)
    name, row, column = fields["map"], fields["row"], fields["column"]
    grid = oracle[name]
    if name == "heads":
        row_index, column_index = int(re.fullmatch(r"block (\d+)", row)[1]), int(re.fullmatch(r"head (\d+)", column)[1])
    else:
        final = re.fullmatch(r"final stream|into block (\d+)", row)
        row_index = grid.shape[0] - 1 if final[1] is None else int(final[1])
        position = re.fullmatch(r"position (\d+) (.+)", column)
        column_index = int(position[1])
        assert position[2] == repr(oracle["tokens"][column_index]), f"column {column!r} names another token"
    shown = float(fields["restored fraction"])
    assert shown == pytest.approx(float(grid[row_index, column_index]), abs=TOLERANCE), (
        f"{name} ({row}, {column}): the widget shows {shown}, the library {float(grid[row_index, column_index]):.4f}")
    return name, row_index, column_index, shown


@pytest.mark.browser
def test_patching_explorer_reads_each_cell_of_both_maps(browser, patching_oracle):
    page, root, readout = open_widget(browser, NOTEBOOK, ".course-patching")
    assert_figures_not_blank(page, root, "patching-initial")
    corrupted_at = len(patching_oracle["tokens"]) - 3
    text = wait_for_readout(readout, lambda t: "restored fraction:" in t, "a cell at start")
    assert _cell(text, patching_oracle) == ("residual stream", 0, corrupted_at, 1.0)  # the clean embedding: exactly 1
    before = figure_png(root)

    choose_option(root.locator(".course-patching-row select"), r"^final stream$")
    last = len(patching_oracle["tokens"]) - 1
    choose_option(root.locator(".course-patching-column select"), rf"^position {last} ")
    text = wait_for_readout(readout, lambda t: "final stream" in t and f"position {last} " in t,
                            f"the final stream at position {last}")
    assert _cell(text, patching_oracle) == ("residual stream", len(patching_oracle["residual stream"]) - 1, last, 1.0)
    choose_option(root.locator(".course-patching-row select"), r"^into block 1$")
    text = wait_for_readout(readout, lambda t: "into block 1" in t, "block 1 at the last position")
    _cell(text, patching_oracle)
    before = wait_for_new_figure(root, before, "choosing another cell")

    choose_option(root.locator(".course-patching-map select"), r"^heads$")
    text = wait_for_readout(readout, lambda t: "map: heads" in t, "the map of heads")
    assert _cell(text, patching_oracle)[:3] == ("heads", 0, 0)  # a new map starts at its first cell
    choose_option(root.locator(".course-patching-column select"), r"^head 3$")
    choose_option(root.locator(".course-patching-row select"), r"^block 1$")
    text = wait_for_readout(readout, lambda t: "block 1" in t and "head 3" in t, "block 1, head 3")
    assert _cell(text, patching_oracle)[:3] == ("heads", 1, 3)
    wait_for_new_figure(root, before, "switching to the map of heads")
    screenshot(page, "patching-explorer")
    assert_figures_not_blank(page, root, "patching-after")
    browser.assert_offline()


def _check_lens(text: str, course, position: int) -> str:
    """Every lens line of the readout against the library's lens on the prompt the readout names; the prompt."""
    assert_no_nan(text, "logit-lens table")
    model, tokenizer = course
    from course_utils.interp import lens_logits

    prompt = ast.literal_eval(parse_fields(text)["prompt"])  # the repr the readout shows
    assert isinstance(prompt, str)
    ids = torch.tensor([tokenizer.encode(prompt)])
    probs = lens_logits(model, ids)[:, 0, position].softmax(-1)  # (layer, d_vocab)
    top2 = probs.topk(2, dim=-1)
    cells = lens_cells(text)
    assert [(layer, pos) for layer, pos, _, _ in cells] == [(layer, position) for layer in range(len(probs))], text
    for layer, _, token, shown in cells:
        assert shown == pytest.approx(float(top2.values[layer, 0]), abs=TOLERANCE), f"layer {layer}: {shown}\n{text}"
        if float(top2.values[layer, 0] - top2.values[layer, 1]) > TOLERANCE:  # a clear leader: the same token
            expected = tokenizer.decode([int(top2.indices[layer, 0])])
            assert re.sub(" +", " ", token) == re.sub(" +", " ", expected), f"layer {layer}: {token!r} vs {expected!r}"
    read = re.search(rf"^position {position} reads (.+)$", text, re.MULTILINE)
    assert read and read[1] == repr(tokenizer.decode([int(ids[0, position])])), text
    return prompt


@pytest.mark.browser
def test_lens_table_follows_the_prompt_and_the_position(browser, course):
    page, root, readout = open_widget(browser, NOTEBOOK, ".course-lens")
    assert_figures_not_blank(page, root, "lens-initial")
    text = wait_for_readout(readout, lambda t: len(lens_cells(t)) > 1, "the lens at start")
    start = lens_cells(text)[0][1]
    first = _check_lens(text, course, start)
    assert start == len(course[1].encode(first)) - 1  # it starts at the first prompt's last position
    before = figure_png(root)

    choose_option(root.locator(".course-lens-position select"), r"^5 ")
    text = wait_for_readout(readout, lambda t: "position 5 reads" in t, "position 5")
    _check_lens(text, course, 5)
    before = wait_for_new_figure(root, before, "choosing position 5")

    choose_option(root.locator(".course-lens-prompt select"), r"JULIET")
    text = wait_for_readout(readout, lambda t: "JULIET" in t and len(lens_cells(t)) > 1, "the JULIET prompt")
    prompt = _check_lens(text, course, lens_cells(text)[0][1])
    last = len(course[1].encode(prompt)) - 1
    assert lens_cells(text)[0][1] == last  # a new prompt starts at its last position
    choose_option(root.locator(".course-lens-position select"), r"^2 ")
    text = wait_for_readout(readout, lambda t: "JULIET" in t and "position 2 reads" in t, "JULIET, position 2")
    _check_lens(text, course, 2)
    wait_for_new_figure(root, before, "switching the prompt")
    screenshot(page, "lens-table")
    assert_figures_not_blank(page, root, "lens-after")
    browser.assert_offline()


def _shown(select) -> str:
    """The label a <select> shows now (ipywidgets writes spaces in labels as no-break spaces)."""
    return select.evaluate("s => s.options[s.selectedIndex].text").replace("\xa0", " ")


def _choose_while_changing(select, pattern: str, tries: int = 10) -> str:
    """``choose_option`` on a dropdown whose options the kernel may be replacing right now (a new map or prompt):
    a label read just before the swap is gone when the choice lands, so try again on the options then shown."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(tries):
        labels = select.locator("option").all_text_contents()
        found = [lab for lab in labels if re.search(pattern, lab.replace("\xa0", " ").strip(), re.IGNORECASE)]
        if found:
            try:
                select.select_option(label=found[0], timeout=2000)
                return found[0]
            except PlaywrightTimeout:  # the options changed between reading and choosing
                pass
        select.page.wait_for_timeout(300)
    raise AssertionError(f"no option matching {pattern!r} stayed in the dropdown; last options: {labels}")


@pytest.mark.browser
def test_quick_choices_leave_readouts_that_match_the_controls(browser, course, patching_oracle):
    """A new map (or prompt) and a new row (or position) chosen at once, without waiting for the kernel: once it is
    idle, each readout describes the cell the dropdowns show, with the library's number, and the figure is drawn."""
    page, root, readout = open_widget(browser, NOTEBOOK, ".course-patching")
    selects = {name: root.locator(f".course-patching-{name} select") for name in ("map", "row", "column")}
    for map_pattern, row_pattern in ((r"^heads$", r"block 2$"), (r"^residual stream$", r"block 1$")):
        choose_option(selects["map"], map_pattern)
        _choose_while_changing(selects["row"], row_pattern)  # may land on the old map's options: either is fine
        wait_kernel_idle(page, settle_s=1.0)
        shown = {name: _shown(select) for name, select in selects.items()}
        text = wait_for_readout(readout, lambda t: parse_fields(t).get("row") == shown["row"],
                                f"the row the dropdown shows, {shown['row']!r}", timeout_s=10)
        assert {name: parse_fields(text)[name] for name in shown} == shown, text
        _cell(text, patching_oracle)
        assert_figures_not_blank(page, root, "patching-quick", timeout_s=5)

    page, root, readout = open_widget(browser, NOTEBOOK, ".course-lens")
    prompt, position = root.locator(".course-lens-prompt select"), root.locator(".course-lens-position select")
    for prompt_pattern in (r"YORK", r"GLOUCESTER"):
        choose_option(prompt, prompt_pattern)
        _choose_while_changing(position, r"^3 ")  # the old prompt's position 3, or the new one's: either is fine
        wait_kernel_idle(page, settle_s=1.0)
        at = int(_shown(position).split(" ", 1)[0])
        text = wait_for_readout(readout, lambda t: f"position {at} reads" in t, f"position {at}", timeout_s=10)
        assert parse_fields(text)["prompt"] == _shown(prompt), text
        _check_lens(text, course, at)
        assert_figures_not_blank(page, root, "lens-quick", timeout_s=5)
    browser.assert_offline()
