"""Classic BPE, WordPiece and Unigram against values derived by hand from the worked corpus
(low x5, lower x2, newest x6, widest x3) and against brute force."""

from __future__ import annotations

import itertools
import random

import pytest

from course_utils.tokenisation import bpe, unigram, wordpiece


def test_worked_merges_and_counts():
    steps = bpe.training_steps(bpe.WORKED_CORPUS, 5)
    assert [(p, c) for p, c, _ in steps] == [(("e", "s"), 9), (("es", "t"), 9), (("est", "</w>"), 9),
                                             (("l", "o"), 7), (("lo", "w"), 7)]
    after = steps[-1][2]
    assert after == {("low", "</w>"): 5, ("low", "e", "r", "</w>"): 2, ("n", "e", "w", "est</w>"): 6,
                     ("w", "i", "d", "est</w>"): 3}


def test_pair_counts_by_hand():
    pairs = bpe.count_pairs(bpe.split_corpus(bpe.WORKED_CORPUS))
    assert pairs[("e", "s")] == 6 + 3 and pairs[("w", "e")] == 2 + 6 and pairs[("l", "o")] == 5 + 2
    assert sum(pairs.values()) == 5 * 3 + 2 * 5 + 6 * 6 + 3 * 6


def test_encoding_and_decoding():
    merges = bpe.train_bpe(bpe.WORKED_CORPUS, 5)
    assert bpe.encode_word("lowest", merges) == ["low", "est</w>"]
    assert bpe.encode_word("newer", merges) == ["n", "e", "w", "e", "r", "</w>"]
    vocab = bpe.build_vocab(bpe.WORKED_CORPUS, merges)
    ids = [vocab.index(p) for p in bpe.encode_word("lowest", merges)]
    assert bpe.decode_ids(ids, vocab) == "lowest "


def test_bad_corpus():
    with pytest.raises(ValueError, match="word_counts is empty"):
        bpe.train_bpe({}, 3)
    with pytest.raises(TypeError, match="word_counts must be a dict"):
        bpe.train_bpe(["low"], 3)


def test_wordpiece_scores_by_hand():
    words = bpe.split_corpus(bpe.WORKED_CORPUS)
    assert wordpiece.count_symbols(words)["e"] == 2 + 6 * 2 + 3
    assert wordpiece.wordpiece_score(words, ("e", "s")) == pytest.approx(9 / (17 * 9))
    assert wordpiece.wordpiece_score(words, ("i", "d")) == pytest.approx(3 / (3 * 3))
    assert wordpiece.train_wordpiece(words, 1) == [("i", "d")]
    assert bpe.train_bpe(bpe.WORKED_CORPUS, 1) == [("e", "s")]


def test_wordpiece_continuation_pieces():
    vocab = {"play", "##ing", "##ed", "p", "##l"}
    assert wordpiece.wordpiece_tokenize("playing", vocab) == ["play", "##ing"]
    assert wordpiece.wordpiece_tokenize("played", vocab) == ["play", "##ed"]
    assert wordpiece.wordpiece_tokenize("xyz", vocab) == ["[UNK]"]


def test_unigram_worked_example():
    probs = {"low": 0.04, "est": 0.03, "lo": 0.01, "west": 0.005, **{c: 0.001 for c in "lowest"}}
    assert unigram.viterbi_segment("lowest", probs) == ["low", "est"]
    assert unigram.split_probability(["low", "est"], probs) == pytest.approx(0.0012)
    assert unigram.split_probability(["lo", "west"], probs) == pytest.approx(0.00005)


@pytest.mark.parametrize("seed", range(20))
def test_viterbi_equals_brute_force(seed):
    rng = random.Random(seed)
    word = "".join(rng.choice("ab") for _ in range(rng.randint(3, 10)))
    pieces = sorted({"".join(t) for n in (1, 2, 3) for t in itertools.product("ab", repeat=n)})  # sorted: no hash-seed order
    probs = {p: rng.random() for p in pieces}
    best = max(unigram.all_splits(word, probs), key=lambda s: unigram.split_probability(s, probs))
    found = unigram.viterbi_segment(word, probs)
    # Splits with the same pieces in another order tie exactly, so compare probabilities, not lists.
    assert "".join(found) == word
    assert unigram.split_probability(found, probs) == pytest.approx(unigram.split_probability(best, probs), rel=1e-12)


def test_viterbi_rejects_unsplittable_word():
    with pytest.raises(ValueError, match="cannot be split"):
        unigram.viterbi_segment("xyz", {"x": 1.0})


def test_pruning_shrinks_to_target_and_keeps_characters():
    candidates = unigram.candidate_pieces(bpe.WORKED_CORPUS)
    final, history = unigram.prune(bpe.WORKED_CORPUS, candidates, target_size=16)
    assert len(final) == 16 and history[0][0] == len(candidates) and history[-1][0] == 16
    assert set("lowernstid") <= set(final)
    assert [size for size, _ in history] == sorted((size for size, _ in history), reverse=True)
    assert sum(final.values()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="target_size"):
        unigram.prune(bpe.WORKED_CORPUS, candidates, target_size=3)
