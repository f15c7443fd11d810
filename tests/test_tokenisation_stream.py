"""The streaming encoder (tokenisation/streaming.py): ``encode_iterable(lines)`` yields ids lazily, equal
to ``encode`` of the joined text (special tokens and chunks split across pieces included), with a peak
of Python memory that does not grow with the stream's length (tracemalloc)."""

from __future__ import annotations

import itertools
import random
import tracemalloc

import pytest

from course_utils.corpus import corpus_slice, load_corpus
from course_utils.tokenisation import real, streaming
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer
from course_utils.tokenisation.pretokenise import GPT2_PATTERN

EOT = "<|endoftext|>"
PIECES = ["a", "b", "Z", "é", " ", "  ", "\n", "\r\n", "'", "'s", "'ll", "1", "23", ".", "!", "\t", EOT, "<|",
          "|>", "endoftext", "漢", "\u0301", "ǅ"]


@pytest.fixture(scope="module")
def tokenizers():
    return {name: real.load(name) for name in real.NAMES}


def _cut(text: str, rng: random.Random, n: int) -> list[str]:
    cuts = sorted(rng.sample(range(len(text) + 1), min(n, len(text) + 1)))
    return [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)])]


@pytest.mark.parametrize("block", [1, streaming.BLOCK])
def test_stream_equals_encode_on_random_texts_cut_anywhere(tokenizers, monkeypatch, block):
    """Texts built to trip a cut (whitespace runs, contractions, marks, digits, special tokens and their
    halves), cut at random places; with one-character blocks every piece is a chance to cut."""
    monkeypatch.setattr(streaming, "BLOCK", block)
    rng = random.Random(0)
    for _ in range(400):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40)))
        pieces = _cut(text, rng, rng.randint(0, 6))
        for name, tok in tokenizers.items():
            for allowed in ("none", "all"):
                assert list(tok.encode_iterable(pieces, allowed)) == tok.encode(text, allowed), (name, allowed, pieces)


def test_stream_of_a_file_equals_encode_of_it(tokenizers, tmp_path, monkeypatch):
    """A file's lines; then an end-of-text token, "\n\n" (GPT-2's 628) and a word, each split over two pieces."""
    monkeypatch.setattr(streaming, "BLOCK", 64)
    text = corpus_slice(load_corpus(), 20_000) + "end of one<|endoftext|> and <|endoftext|>the next\n\n\nline"
    path = tmp_path / "text.txt"
    path.write_text(text, encoding="utf-8", newline="")
    gpt2 = tokenizers["gpt2"]
    with open(path, encoding="utf-8", newline="") as f:
        assert list(gpt2.encode_iterable(f, "all")) == gpt2.encode(text, "all")
    pieces = ["x <|endof", "text|>\n", "\n", "\n", "tok", "enisation"]
    ids = list(gpt2.encode_iterable(pieces, "all"))
    assert ids == gpt2.encode("".join(pieces), "all") == [87, 220, 50256, 628, 198, 30001, 5612]
    assert ids != [i for piece in pieces for i in gpt2.encode(piece, "all")]  # piece by piece would differ


def test_a_special_token_with_a_space_between_letters_is_never_cut(monkeypatch):
    """"<|end of text|>" holds a place to cut (d| o); a cut there would split the token."""
    monkeypatch.setattr(streaming, "BLOCK", 1)
    special = "<|end of text|>"
    tok = ByteBPETokenizer.train("the end of it " * 50, 300, special_tokens=[special])
    text = ("one more line" + special + "and then some words\n") * 20
    pieces = _cut(text, random.Random(1), 200)
    ids = list(tok.encode_iterable(pieces, "all"))
    assert ids == tok.encode(text, "all") and ids.count(tok.special_tokens[special]) == 20


def test_ids_come_lazily():
    consumed = []

    def lines():
        for i in itertools.count():
            if i > 50_000:  # a plant that reads everything first fails here instead of hanging
                raise AssertionError("encode_iterable read the whole stream before yielding")
            consumed.append(i)
            yield "to be or not to be that is the question\n"

    first = list(itertools.islice(real.load("gpt2").encode_iterable(lines()), 10))
    assert len(first) == 10 and len(consumed) < streaming.BLOCK  # an endless stream: only a block was read


def _peak_bytes(tok, n_chars: int) -> tuple[int, int]:
    """Peak traced memory while streaming ``n_chars`` of text generated line by line, and the ids' count."""
    lines = corpus_slice(load_corpus(), 50_000).splitlines(keepends=True)

    def generate():
        made = 0
        for line in itertools.cycle(lines):
            if made >= n_chars:
                return
            made += len(line)
            yield line + ""  # a new string each time, like a file's lines

    tracemalloc.start()
    try:
        count = sum(1 for _ in tok.encode_iterable(generate(), "all"))
        return tracemalloc.get_traced_memory()[1], count
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_stream():
    """Streaming 1.5 MB holds no more than streaming 0.25 MB: a block of text and its ids, under 1 MB."""
    tok = real.load("gpt2")
    tok.encode(corpus_slice(load_corpus(), 50_000))  # fill the chunk cache first: it is not the stream's memory
    _peak_bytes(tok, 20_000)  # and load the streaming module and its patterns
    small, n_small = _peak_bytes(tok, 250_000)
    large, n_large = _peak_bytes(tok, 1_500_000)
    assert n_large > 5 * n_small
    assert large < 1_000_000, f"streaming 1.5 MB peaked at {large:,} bytes"
    assert large < small + 100_000, f"peak grew from {small:,} to {large:,} bytes"


def test_the_chunk_cache_is_bounded(monkeypatch):
    monkeypatch.setattr("course_utils.tokenisation.byte_bpe.CACHE_SIZE", 100)
    tok = real.load("gpt2")
    tok._cache.clear()
    words = " ".join(f"w{i}x" for i in range(1000))
    assert tok.encode(words) == real.tiktoken_encoding("gpt2").encode_ordinary(words)
    assert 0 < len(tok._cache) <= 100


@pytest.mark.parametrize("lines, allowed, error, message", [
    ("one text", "none", TypeError, "use encode"),
    (42, "none", TypeError, "lines must be an iterable of str"),
    (["ok", 3], "none", TypeError, r"lines\[1\] must be a str, got int"),
    ([b"bytes\n"], "none", TypeError, "open the file in text mode"),
    (["x"], "some", ValueError, "allowed_special must be"),
    (["x"], {"<|nope|>"}, ValueError, "are not special tokens"),
])
def test_bad_input_is_named(lines, allowed, error, message):
    tok = real.load("gpt2")
    with pytest.raises(error, match=message):
        list(tok.encode_iterable(lines, allowed))


def test_another_split_pattern_is_refused():
    tok = ByteBPETokenizer({bytes([b]): b for b in range(256)}, pattern=r"\S+|\s+")
    assert tok.pattern != GPT2_PATTERN
    with pytest.raises(ValueError, match="encode_iterable cuts a stream only where"):
        tok.encode_iterable(["a b"])
