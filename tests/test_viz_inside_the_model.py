"""Notebook 13's widgets without a browser: the patching explorer (``viz.patching_explorer``) and the
logit-lens table (``viz.lens_table``). Their readouts are checked against the library (the maps from
``interp.patching``, the lens from ``interp.lens_logits``), their controls are driven in Python, and bad
input names its argument. The browser side is tests/browser/test_inside_the_model.py."""

from __future__ import annotations

import html
import re

import pytest
import torch

from course_utils.gpt.checkpoint import load_checkpoint
from course_utils.interp.logit_lens import lens_logits
from course_utils.viz.lens_table import lens_readout, lens_rows, lens_table_widget, lens_tables
from course_utils.viz.patching_explorer import patching_explorer, patching_maps, patching_readout

PROMPTS = ["YORK:\nI say, my lord of Y", "ROMEO:\nBut soft"]


def _with_class(box, css: str):
    found = [box] if css in box._dom_classes else []
    for child in getattr(box, "children", ()):
        found += _with_class(child, css)
    return found


def _text(readout) -> str:
    return html.unescape(readout.value.replace("<br>", "\n"))


@pytest.fixture(scope="module")
def course():
    ckpt = load_checkpoint()
    return ckpt["model"], ckpt["tokenizer"]


def test_patching_readout_reads_the_maps_cell():
    grid = torch.arange(12, dtype=torch.float64).reshape(3, 4) / 7  # 3 decimals of k / 7 are all different
    heads = -torch.arange(6, dtype=torch.float64).reshape(2, 3) / 9
    maps = patching_maps(grid, ["a", " <b>", "\n", "d"], heads)
    text = html.unescape(patching_readout(maps, "residual stream", 1, 2).replace("<br>", "\n"))
    assert text.splitlines() == ["map: residual stream", "row: into block 1", "column: position 2 '\\n'",
                                 f"restored fraction: {float(grid[1, 2]):.3f}"]
    assert "<b>" not in patching_readout(maps, "residual stream", 0, 1)  # a token is text, never markup
    assert patching_readout(maps, "heads", 1, 2).endswith(f"restored fraction: {float(heads[1, 2]):.3f}")
    assert maps["residual stream"].rows[-1] == "final stream"
    assert maps["heads"].columns == ["head 0", "head 1", "head 2"]


def test_patching_maps_name_bad_input():
    with pytest.raises(ValueError, match="tokens"):
        patching_maps(torch.zeros(3, 4), ["a", "b"])
    with pytest.raises(TypeError, match="grid"):
        patching_maps([[0.0]], ["a"])
    with pytest.raises(ValueError, match="head_grid"):
        patching_maps(torch.zeros(2, 1), ["a"], torch.zeros(3))
    with pytest.raises(TypeError, match="tokens"):
        patching_maps(torch.zeros(2, 1), "a")
    with pytest.raises(ValueError, match="start"):
        patching_explorer(torch.zeros(2, 1), ["a"], start=(2, 0))


def test_the_explorer_switches_maps_and_cells():
    grid = torch.linspace(-1, 1, 15, dtype=torch.float64).reshape(3, 5)
    heads = torch.linspace(0, 0.5, 8, dtype=torch.float64).reshape(2, 4)
    box = patching_explorer(grid, list("abcde"), heads, start=(0, 3))
    (readout,), (figure,) = _with_class(box, "course-readout"), _with_class(box, "course-figure")
    (choice,), (row,), (column,) = (_with_class(box, f"course-patching-{c}") for c in ("map", "row", "column"))
    assert _text(readout).endswith(f"restored fraction: {float(grid[0, 3]):.3f}")
    first = figure.course_png
    row.value = 2
    assert "row: final stream" in _text(readout) and _text(readout).endswith(f"{float(grid[2, 3]):.3f}")
    choice.value = "heads"  # rows and columns become the heads' (at the first cell)
    assert [label for label, _ in column.options] == ["head 0", "head 1", "head 2", "head 3"]
    assert (row.value, column.value) == (0, 0) and "map: heads" in _text(readout)
    column.value = 3
    assert _text(readout).splitlines()[1:] == ["row: block 0", "column: head 3",
                                               f"restored fraction: {float(heads[0, 3]):.3f}"]
    assert figure.course_png != first
    face = box._repr_mimebundle_()["text/html"]
    assert "map = heads; row = block 0; column = head 3" in face


def test_lens_tables_agree_with_the_lens_itself(course):
    model, tokenizer = course
    tables = lens_tables(model, tokenizer, PROMPTS)
    for prompt, table in tables.items():
        ids = torch.tensor([tokenizer.encode(prompt)])
        probs = lens_logits(model, ids)[:, 0].softmax(-1)  # (layer, pos, d_vocab): the oracle
        assert table["tokens"] == [tokenizer.decode([i]) for i in ids[0].tolist()]
        torch.testing.assert_close(table["top_probs"], probs.max(-1).values)
        top = probs.argmax(-1)  # (layer, pos)
        assert table["top_tokens"] == [[tokenizer.decode([i]) for i in row] for row in top.tolist()]
    with pytest.raises(ValueError, match="prompts"):
        lens_tables(model, tokenizer, "YORK")
    with pytest.raises(ValueError, match="prompts"):
        lens_tables(model, tokenizer, ["YORK", ""])


def test_lens_readout_lines():
    table = {"prompt": "a <k", "tokens": ["a", " <k"], "top_tokens": [["x", "y"], ["z", "ing"]],
             "top_probs": torch.tensor([[0.5, 0.25], [0.125, 0.8125]])}
    text = html.unescape(lens_readout(table, 1).replace("<br>", "\n"))
    assert text.splitlines() == ["prompt: 'a <k'", "position 1 reads ' <k'", "embedding, position 1: 'y' 0.250",
                                 "after block 0, position 1: 'ing' 0.812"]
    assert "<k" not in lens_readout(table, 1) and lens_rows(3) == ["embedding", "after block 0", "after block 1"]


def test_the_lens_widget_switches_prompts_and_positions(course):
    model, tokenizer = course
    box = lens_table_widget(model, tokenizer, PROMPTS)
    (readout,), (prompt,), (position,) = (_with_class(box, c) for c in
                                          ("course-readout", "course-lens-prompt", "course-lens-position"))
    n_first, n_second = len(tokenizer.encode(PROMPTS[0])), len(tokenizer.encode(PROMPTS[1]))
    assert position.value == n_first - 1 and _text(readout).splitlines()[:2] == [
        f"prompt: {PROMPTS[0]!r}", f"position {n_first - 1} reads 'Y'"]
    prompt.value = PROMPTS[1]
    assert len(position.options) == n_second and position.value == n_second - 1
    position.value = 2
    lines = _text(readout).splitlines()
    assert len(lines) == model.cfg.n_layers + 3 and all(re.search(r", position 2: .+ \d\.\d{3}$", x) for x in lines[2:])
    assert lines == html.unescape(lens_readout(lens_tables(model, tokenizer, PROMPTS[1:])[PROMPTS[1]], 2)
                                  .replace("<br>", "\n")).splitlines()
