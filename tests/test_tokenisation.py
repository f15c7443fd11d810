"""Byte-level BPE library: trainer agreement, round trips, save/load, and bad input."""

from __future__ import annotations

import gzip
import json
import random

import pytest

from course_utils.corpus import corpus_slice, load_corpus
from course_utils.tokenisation import rankfiles, real
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer
from course_utils.tokenisation.pretokenise import pretokenise, visible
from course_utils.tokenisation.trainer import (_merge_word, chunk_counts, learn_merges, learn_merges_naive,
                                               train_byte_bpe)


@pytest.fixture(scope="module")
def small_text():
    return corpus_slice(load_corpus(), 120_000)


@pytest.fixture(scope="module")
def trained(small_text):
    return ByteBPETokenizer.train(small_text, vocab_size=400, special_tokens=["<|endoftext|>", "<pad>"])


@pytest.mark.slow  # subprocesses or training: not in the quick loop (make test-fast)
def test_incremental_trainer_equals_naive_trainer(small_text):
    counts = chunk_counts(small_text)
    assert learn_merges(counts, 200) == learn_merges_naive(counts, 200)


def test_trainers_agree_on_a_text_with_ties_and_repeats():
    text = "aaaa aaa aa a abab ab ba " * 3 + "xyz xyzxyz zz"
    counts = chunk_counts(text)
    assert learn_merges(counts, 30) == learn_merges_naive(counts, 30)


@pytest.mark.parametrize("seed", range(6))
def test_trainers_agree_on_random_texts_until_no_pair_is_left(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice("aab b\n😀é") for _ in range(400))
    counts = chunk_counts(text)
    naive = learn_merges_naive(counts, 500)
    assert learn_merges(counts, 500) == naive
    assert len(naive) > 20  # these texts allow dozens of merges before every chunk is one token


def test_first_merge_is_the_most_frequent_pair_counted_by_hand():
    # chunks "the", " the", " the": ('t','h') 3, ('h','e') 3, (' ','t') 2; tie at 3 -> smallest ids (104, 101).
    merges = train_byte_bpe("the the the", 257)
    assert merges == [(b"he", (104, 101))]


def test_merge_word_is_left_to_right():
    assert _merge_word([1, 1, 1], (1, 1), 9) == [9, 1]
    assert _merge_word([1, 2, 3, 1, 2], (1, 2), 9) == [9, 3, 9]


def test_trained_tokenizer_round_trips_and_compresses(trained, small_text):
    ids = trained.encode(small_text)
    assert trained.decode(ids) == small_text
    assert len(ids) < 0.75 * len(small_text.encode())
    assert trained.n_vocab == 400
    assert trained.encode("<pad>", allowed_special="all") == [399]


def test_save_load_round_trip(trained, tmp_path, small_text):
    path = tmp_path / "tok.json"
    trained.save(path)
    loaded = ByteBPETokenizer.load(path)
    assert loaded.ranks == trained.ranks and loaded.special_tokens == trained.special_tokens
    assert loaded.encode(small_text[:5000]) == trained.encode(small_text[:5000])


@pytest.mark.parametrize("content, problem", [
    ('{"format": "something-else/2", "ranks": "", "pattern": "", "special_tokens": {}}',
     r"its format field is 'something-else/2', expected 'course-byte-bpe/1'"),
    ('{"ranks": ""}', r"its format field is None"),
    ('[1, 2]', r"it holds a JSON list, not an object"),
    ('{"format": "course-byte-bpe/1", "pattern": ""}', r"it lacks the fields \['ranks', 'special_tokens'\]"),
    ("not json", r"it is not UTF-8 JSON"),
])
def test_load_names_the_file_and_the_problem(tmp_path, content, problem):
    path = tmp_path / "other.json"
    path.write_text(content, encoding="utf-8")
    not_ours = r"path: '.*other\.json' is not a file written by ByteBPETokenizer\.save"
    with pytest.raises(ValueError, match=rf"{not_ours}: {problem}"):
        ByteBPETokenizer.load(path)


def test_pretokenise_keeps_the_leading_space():
    assert pretokenise("Hello world!") == ["Hello", " world", "!"]
    assert visible(b" cat") == "Ġcat"


def test_decoding_half_an_emoji_gives_the_replacement_character():
    gpt2 = real.load("gpt2")
    ids = gpt2.encode("😀")
    assert len(ids) > 1
    assert gpt2.decode(ids[:1]) == "\ufffd"
    assert gpt2.decode_bytes(ids) == "😀".encode()


# -- bad input --------------------------------------------------------------------------------
def test_train_rejects_empty_text():
    with pytest.raises(ValueError, match="text is empty"):
        ByteBPETokenizer.train("", 300)


def test_train_rejects_non_string():
    with pytest.raises(TypeError, match="text must be a str"):
        ByteBPETokenizer.train(b"bytes", 300)


def test_train_rejects_vocab_smaller_than_bytes():
    with pytest.raises(ValueError, match="vocab_size must be at least 256"):
        ByteBPETokenizer.train("hello", 100)
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        ByteBPETokenizer.train("hello", 300.0)


def test_encode_rejects_non_string(trained):
    with pytest.raises(TypeError, match="text must be a str"):
        trained.encode(["not", "a", "string"])
    with pytest.raises(ValueError, match="allowed_special"):
        trained.encode("x", allowed_special={"<nope>"})
    with pytest.raises(ValueError, match="allowed_special must be 'all', 'none' or a set"):
        trained.encode("x", allowed_special="<pad>")
    assert trained.encode("<pad>x", allowed_special={"<pad>"})[0] == 399


def test_decode_rejects_ids_outside_vocab(trained):
    with pytest.raises(ValueError, match=r"ids\[1\] = 400 is outside the vocabulary"):
        trained.decode([65, 400])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        trained.decode([-1])
    with pytest.raises(TypeError, match="ids must be a sequence"):
        trained.decode("65")
    with pytest.raises(TypeError, match=r"ids\[0\] must be an int"):
        trained.decode([1.5])


def test_missing_rank_file(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        rankfiles.load_tiktoken_file(tmp_path / "nope.tiktoken")
    with pytest.raises(ValueError, match="encoder_json"):
        rankfiles.load_gpt2_files(tmp_path / "encoder.json", tmp_path / "vocab.bpe")
    with pytest.raises(ValueError, match="path"):
        ByteBPETokenizer.load(tmp_path / "nope.json")


def test_malformed_rank_files(tmp_path):
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("IQ== 0\nnot-base64!! 1\n")
    with pytest.raises(ValueError, match="malformed line 2"):
        rankfiles.load_tiktoken_file(bad)
    gz = tmp_path / "bad.tiktoken.gz"
    gz.write_bytes(gzip.compress(b"IQ== zero\n"))
    with pytest.raises(ValueError, match="malformed line 1"):
        rankfiles.load_tiktoken_file(gz)
    short = tmp_path / "short.tiktoken"
    short.write_text("IQ== 0\n")
    with pytest.raises(ValueError, match="all 256 single bytes"):
        ByteBPETokenizer.from_tiktoken_file(short, pattern=r"\S+")
    enc = tmp_path / "encoder.json"
    enc.write_text("[1, 2]")
    with pytest.raises(ValueError, match="encoder_json"):
        rankfiles.load_gpt2_files(enc, real.data_files("gpt2")[1])
    enc.write_text(json.dumps({"a": 0}))
    with pytest.raises(ValueError, match="vocab_bpe: merge 1"):
        rankfiles.load_gpt2_files(enc, real.data_files("gpt2")[1])


def test_unknown_real_tokenizer_name():
    with pytest.raises(ValueError, match="name must be one of"):
        real.load("gpt5")


def test_tokenizer_construction_errors():
    with pytest.raises(TypeError, match="ranks must be a dict"):
        ByteBPETokenizer([b"a"])
    with pytest.raises(ValueError, match="all 256 single bytes"):
        ByteBPETokenizer({})
    byte_ranks = {bytes([b]): b for b in range(256)}
    with pytest.raises(ValueError, match="special_tokens: ids"):
        ByteBPETokenizer(byte_ranks, special_tokens={"<eot>": 5})


def test_a_modified_package_file_is_refused(monkeypatch):
    package, files, hashes, pattern, specials = real.SPECS["cl100k_base"]
    monkeypatch.setitem(real.SPECS, "cl100k_base", (package, files, ("0" * 64,), pattern, specials))
    with pytest.raises(ValueError, match="published sha256"):
        real.data_files("cl100k_base")


def test_decode_accepts_integer_like_ids(trained):
    import numpy as np
    import torch

    ids = trained.encode("the king")
    assert trained.decode(torch.tensor(ids)) == trained.decode(np.array(ids)) == "the king"
