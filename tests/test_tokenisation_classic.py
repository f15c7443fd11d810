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


def test_one_tie_break_rule_serves_every_trainer(monkeypatch):
    from course_utils.tokenisation import trainer

    assert bpe.best_pair({("s", "t"): 9, ("e", "s"): 9, ("a", "b"): 2}) == ("e", "s")
    assert bpe.best_pair({(3, 1): 4, (2, 7): 4}) == (2, 7)  # pairs of ids: the smallest (left, right)
    calls = []
    real = bpe.best_pair
    spy = lambda counts: calls.append(len(counts)) or real(counts)
    monkeypatch.setattr(trainer, "best_pair", spy)
    monkeypatch.setattr(wordpiece, "best_pair", spy)
    trainer.learn_merges_naive(trainer.chunk_counts("abab cdcd"), 2)
    wordpiece.train_wordpiece(bpe.split_corpus(bpe.WORKED_CORPUS), 2)
    assert len(calls) == 4


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
    assert len(final) == 16 and history[0].size == len(candidates) and history[-1].size == 16
    assert set("lowernstid") <= set(final)
    assert [r.size for r in history] == sorted((r.size for r in history), reverse=True)
    assert sum(final.values()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="target_size"):
        unigram.prune(bpe.WORKED_CORPUS, candidates, target_size=3)
    with pytest.raises(ValueError, match="drop"):
        unigram.prune(bpe.WORKED_CORPUS, candidates, target_size=16, drop=1.0)


def _best_segmentation_by_brute_force(word_counts, vocab):
    """The highest segmentation log-likelihood over every combination of every word's splits."""
    words = sorted(word_counts)
    options = [unigram.all_splits(w, vocab) for w in words]
    return max(unigram.segmentation_log_likelihood(word_counts, dict(zip(words, combo)))
               for combo in itertools.product(*options))


@pytest.mark.parametrize("kept", [None, "lowernstid", "lowernstid|low|est|new|wid", "lowernstid|newes|wides|low"])
def test_fit_finds_the_best_segmentation_of_the_worked_corpus(kept):
    candidates = unigram.candidate_pieces(bpe.WORKED_CORPUS)
    if kept is not None:
        letters, *longer = kept.split("|")
        candidates = {p: q for p, q in candidates.items() if p in set(letters) | set(longer)}
    probs, splits = unigram.fit(bpe.WORKED_CORPUS, candidates)
    best = _best_segmentation_by_brute_force(bpe.WORKED_CORPUS, candidates)
    assert unigram.segmentation_log_likelihood(bpe.WORKED_CORPUS, splits) == pytest.approx(best, abs=1e-9)
    assert sum(probs.values()) == pytest.approx(1.0)
    used = unigram.usage(bpe.WORKED_CORPUS, splits)
    assert all((probs[p] > 0) == (used[p] > 0) for p in probs)  # no smoothing: unused pieces get 0


def test_pruning_removes_unused_pieces_first_and_the_likelihood_never_rises():
    candidates = unigram.candidate_pieces(bpe.WORKED_CORPUS)
    final, history = unigram.prune(bpe.WORKED_CORPUS, candidates, target_size=10, drop=0)
    assert set(final) == set("lowernstid") and [len(r.removed) for r in history[1:]] == [1] * 34
    lls = [r.log_likelihood for r in history]
    assert all(after <= before + 1e-9 for before, after in zip(lls, lls[1:])), lls
    for before, r in zip(lls, history[1:]):
        if r.unused:  # removing a piece no word uses changes nothing
            assert r.log_likelihood == pytest.approx(before, abs=1e-12)
    first_costly = next(k for k, r in enumerate(history[1:], 1) if r.log_likelihood < lls[k - 1] - 1e-9)
    assert all(k < first_costly for k, r in enumerate(history[1:], 1) if r.unused)  # unused go first
    assert all(r.log_likelihood == pytest.approx(lls[0]) for r in history[1:first_costly])
    assert lls[-1] < lls[0]


def test_pruned_vocabulary_keeps_only_pieces_in_use_besides_letters():
    candidates = unigram.candidate_pieces(bpe.WORKED_CORPUS)
    final, _ = unigram.prune(bpe.WORKED_CORPUS, candidates, target_size=14, drop=0)
    used = unigram.usage(bpe.WORKED_CORPUS, unigram.segment(bpe.WORKED_CORPUS, final))
    assert all(used[p] > 0 for p in final if len(p) > 1)


def test_removal_loss_is_zero_for_unused_pieces_and_positive_for_needed_ones():
    candidates = unigram.candidate_pieces(bpe.WORKED_CORPUS)
    probs, splits = unigram.fit(bpe.WORKED_CORPUS, candidates)
    unused = [p for p in probs if len(p) > 1 and probs[p] == 0]
    assert unused and all(unigram.removal_loss(bpe.WORKED_CORPUS, probs, splits, p) == 0.0 for p in unused)
    assert unigram.removal_loss(bpe.WORKED_CORPUS, probs, splits, "low") > 0  # low x5 would need letters
