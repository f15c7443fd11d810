"""The tokenizer widget's pieces and readout (no browser: the browser test lives elsewhere)."""

from __future__ import annotations

import re

import pytest

from course_utils.tokenisation import real
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer
from course_utils.tokenisation.course import CHOICES, split_for_display
from course_utils.viz.tokenisation import render_pieces, tokenizer_widget


@pytest.fixture(scope="module")
def tiny_bpe():
    return ByteBPETokenizer.train("the cat sat on the mat " * 50, 270)


def test_characters_and_bytes():
    assert split_for_display("café", "characters") == [("c", 99), ("a", 97), ("f", 102), ("é", 233)]
    assert [i for _, i in split_for_display("café", "bytes")] == list("café".encode())
    assert len(split_for_display("😀", "bytes")) == 4


@pytest.mark.parametrize("choice", ["GPT-2", "cl100k_base", "o200k_base"])
def test_real_choices_use_tiktokens_ids(choice):
    name = {"GPT-2": "gpt2"}.get(choice, choice)
    text = "Tokenisation: strawberry, café 😀"
    assert [i for _, i in split_for_display(text, choice)] == real.tiktoken_encoding(name).encode(text)


def test_widget_classes_and_readout(tiny_bpe):
    root = tokenizer_widget(tiny_bpe, text="the cat", choice="course BPE")
    assert "course-tokenizer" in root._dom_classes
    text, dropdown, readout = root.children
    assert "course-tokenizer-text" in text._dom_classes and "course-tokenizer-choice" in dropdown._dom_classes
    assert "course-readout" in readout._dom_classes and list(dropdown.options) == list(CHOICES)
    ids = tiny_bpe.encode("the cat")
    assert f"ids: {ids}" in readout.value and f"tokens: {len(ids)}" in readout.value
    assert len(re.findall(r'<span class="course-token" title="id \d+"', readout.value)) == len(ids)
    dropdown.value = "characters"
    assert "tokens: 7" in readout.value
    text.value = "a<b"
    assert "&lt;" in readout.value and "tokens: 3" in readout.value


def test_render_and_bad_choice():
    assert 'title="id 5"' in render_pieces([("hi", 5)])
    with pytest.raises(ValueError, match="choice must be one of"):
        split_for_display("x", "gpt5")
    with pytest.raises(TypeError, match="text must be a str"):
        split_for_display(3, "bytes")
