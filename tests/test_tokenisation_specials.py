"""Special tokens in byte-level BPE (tokenisation/specials.py, ByteBPETokenizer.train): cut out of the
text before pre-tokenisation when training, never merged across, given the last ids; kept whole by
encode and restored by decode, as tiktoken does with the same ranks; bad sets refused clearly."""

from __future__ import annotations

from collections import Counter

import pytest
import tiktoken

from course_utils.tokenisation import real
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer
from course_utils.tokenisation.specials import check_special_tokens, split_specials
from course_utils.tokenisation.trainer import chunk_counts

EOT = "<|endoftext|>"
DOCS = ["the cat sat on the mat", "a dog ran far", "theEOSend is near", "no end\n \n"]


def _training_text(repeats: int = 40) -> str:
    return "".join(doc + EOT for doc in DOCS * repeats) + "EOS".join(DOCS * repeats)


def test_split_specials_cuts_every_occurrence_and_keeps_the_rest():
    assert list(split_specials("a<|x|>b<|x|><|y|>", ["<|x|>", "<|y|>"])) == [
        ("a", False), ("<|x|>", True), ("b", False), ("<|x|>", True), ("<|y|>", True)]
    assert list(split_specials("plain", [])) == [("plain", False)]


def test_specials_are_cut_out_before_pre_tokenisation():
    text = _training_text(1)
    pieces = [p for p, special in split_specials(text, [EOT, "EOS"]) if not special]
    assert chunk_counts(text, special_tokens=[EOT, "EOS"]) == sum((chunk_counts(p) for p in pieces), Counter())
    plain = chunk_counts(text)  # without the cut, the special's pieces are chunks, and "theEOSend" is one word
    assert plain["endoftext"] == len(DOCS) and plain["theEOSend"] == 1
    counted = chunk_counts(text, special_tokens=[EOT, "EOS"])
    assert "endoftext" not in counted and "<|" not in counted and "theEOSend" not in counted
    assert counted["the"] >= 1 and counted["end"] >= 1  # "theEOSend" is "the" [EOS] "end"


def test_training_never_merges_a_special_token_or_across_one():
    tok = ByteBPETokenizer.train(_training_text(), 290, special_tokens=[EOT, "EOS"])
    learned = [t for t in tok.ranks if len(t) > 1]
    assert len(learned) == 290 - 256 - 2  # the text has pairs enough for every merge
    for special in (EOT, "EOS"):
        assert not any(special.encode() in t for t in learned)
    assert not any(b"<|" in t or b"|>" in t or b"endoftext" in t or b"eE" in t or b"Se" in t for t in learned)
    untouched = ByteBPETokenizer.train(_training_text(), 290)  # the plant: no cut, and those merges appear
    assert any(b"endoftext" in t for t in untouched.ranks) and any(b"eE" in t for t in untouched.ranks)


def test_special_ids_are_the_last_ones_whatever_the_text_gives():
    tok = ByteBPETokenizer.train(_training_text(), 290, special_tokens=[EOT, "EOS"])
    assert tok.special_tokens == {EOT: 288, "EOS": 289} and tok.n_vocab == 290
    short = ByteBPETokenizer.train("ab ab", 300, special_tokens=[EOT])  # runs out of pairs after 2 merges
    assert short.special_tokens == {EOT: 299} and short.n_vocab == 300 and len(short.ranks) == 258
    with pytest.raises(ValueError, match="unused ids"):
        short.decode([270])


def test_encode_keeps_specials_whole_and_decode_restores_them():
    tok = ByteBPETokenizer.train(_training_text(), 290, special_tokens=[EOT, "EOS"])
    text = "the cat<|endoftext|>theEOSend\n<|endoftext|>"
    ids = tok.encode(text, allowed_special="all")
    assert ids.count(288) == 2 and ids.count(289) == 1 and tok.decode(ids) == text
    assert tok.encode(text, allowed_special={EOT}).count(289) == 0  # "EOS" not allowed: plain text
    assert 288 not in tok.encode(text)  # the default treats them as plain text, as before


def test_specials_equal_tiktoken_with_the_same_ranks():
    tok = ByteBPETokenizer.train(_training_text(), 290, special_tokens=[EOT, "EOS"])
    oracle = tiktoken.Encoding(name="course-specials", pat_str=tok.pattern, mergeable_ranks=tok.ranks,
                               special_tokens=tok.special_tokens)
    texts = [_training_text(2), "x <|endoftext|> y\n\n<|endoftext|><|endoftext|>EOS", "EOSEOS the end EOS"]
    for text in texts:
        for allowed in ("all", {EOT}, {"EOS"}):
            theirs = oracle.encode(text, allowed_special=allowed, disallowed_special=())  # the rest: plain text
            assert tok.encode(text, allowed_special=allowed) == theirs
        assert tok.encode_ordinary(text) == oracle.encode_ordinary(text)


def test_gpt2_end_of_text_equals_tiktoken():
    ours, theirs = real.load("gpt2"), real.tiktoken_encoding("gpt2")
    text = "first<|endoftext|> second\n\n<|endoftext|>third <|endoftext|>"
    assert ours.encode(text, allowed_special={EOT}) == theirs.encode(text, allowed_special={EOT})
    assert ours.encode(text, allowed_special={EOT}).count(50256) == 3


@pytest.mark.parametrize("tokens, error, message", [
    ("<|endoftext|>", TypeError, "must be a list of str"),
    ([EOT, 7], TypeError, r"special_tokens\[1\] must be a str, got int"),
    ([b"<|x|>"], TypeError, r"special_tokens\[0\] must be a str, got bytes"),
    ([""], ValueError, "is the empty string"),
    ([EOT, EOT], ValueError, "more than once"),
    (["<|a|>", "a"], ValueError, "'a' is inside '<|a|>'"),
    (["<|x", "x|>"], ValueError, "ends with 'x', which starts 'x|>'"),
    (["<a<"], ValueError, "ends with '<', which starts '<a<'"),  # overlaps itself: "<a<a<"
])
def test_bad_special_tokens_are_refused(tokens, error, message):
    with pytest.raises(error, match=message):
        check_special_tokens(tokens)
    with pytest.raises(error, match=message):
        ByteBPETokenizer.train("some text here", 300, special_tokens=tokens)


def test_the_tokenizer_refuses_bad_special_ids_and_small_vocabularies():
    ranks = {bytes([b]): b for b in range(256)}
    assert check_special_tokens(["<|im_start|>", "<|im_end|>", EOT]) == ["<|im_start|>", "<|im_end|>", EOT]
    with pytest.raises(ValueError, match="its own non-negative int id"):
        ByteBPETokenizer(ranks, special_tokens={"<|a|>": 300, "<|b|>": 300})
    with pytest.raises(ValueError, match="its own non-negative int id"):
        ByteBPETokenizer(ranks, special_tokens={"<|a|>": "300"})
    with pytest.raises(ValueError, match="inside"):
        ByteBPETokenizer(ranks, special_tokens={"<|a|>": 300, "a|": 301})
    with pytest.raises(ValueError, match="at least 256 bytes \\+ 2 special tokens = 258, got 257"):
        ByteBPETokenizer.train("ab ab", 257, special_tokens=["<|a|>", "<|b|>"])
