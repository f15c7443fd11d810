"""Checks for notebook 01 (tokenisation): seven exercises on classic BPE, WordPiece and Unigram.

Each check runs the student's function on the worked corpus (low x5, lower x2, newest x6,
widest x3) and on seeded random corpora over a small alphabet, compares with the reference in
``course_utils.tokenisation``, and names the likely mistake.
"""

from __future__ import annotations

from course_utils.checks.core import Case, Exercise, Mistake
from course_utils.checks import _tokenisation_banks as bank
from course_utils.tokenisation.bpe import EOW, count_pairs, decode_ids, encode_word, merge_pair, split_corpus, train_bpe
from course_utils.tokenisation.unigram import viterbi_segment
from course_utils.tokenisation.wordpiece import wordpiece_score


# -- 1. pair counting ----------------------------------------------------------------------------
COUNT_PAIRS = Exercise(
    name="bpe_count_pairs", reference=count_pairs,
    cases=lambda seed: [Case(label, (split_corpus(wc),)) for label, wc in bank.corpora(seed)],
    mistakes=[
        Mistake("unweighted", bank.pairs_unweighted, "each word's pairs must be counted as many times as the word occurs: add its count, not 1"),
        Mistake("once per word", bank.pairs_once_per_word, "a pair that occurs twice in one word (a a a a) counts twice: don't use a set of pairs"),
        Mistake("skips the last pair", bank.pairs_skip_last, "the last pair of each word (the one ending in '</w>') is missing: zip(symbols, symbols[1:]) covers them all"),
    ])


# -- 2. one merge --------------------------------------------------------------------------------
MERGE_PAIR = Exercise(
    name="bpe_merge_pair", reference=merge_pair, cases=bank.merge_cases,
    mistakes=[
        Mistake("first occurrence only", bank.merge_first_only, "only the first occurrence in each word was merged: keep scanning after a merge"),
        Mistake("right to left", bank.merge_right_to_left, "overlapping matches (a a a) must be merged left to right: ('aa', 'a'), not ('a', 'aa')"),
        Mistake("overwrites counts", bank.merge_overwrites, "two words that become the same symbols must have their counts added, not overwritten"),
    ])


# -- 3. the training loop ------------------------------------------------------------------------
TRAIN_BPE = Exercise(
    name="bpe_train", reference=train_bpe,
    cases=lambda seed: [Case(f"{label}, {n} merges", (wc, n)) for (label, wc), n in zip(bank.corpora(seed), (5, 3, 6, 8))],
    mistakes=[
        Mistake("unweighted", lambda wc, n: bank.train_with(wc, n, bank.smallest_tie, weighted=False),
                "pairs must be counted with each word's frequency (low x5 counts 5 times)"),
        Mistake("no recount", lambda wc, n: bank.train_with(wc, n, bank.smallest_tie, recount=False),
                "recount the pairs after every merge: merging changes which pairs exist"),
        Mistake("tie-break", lambda wc, n: bank.train_with(wc, n, bank.first_seen_tie),
                "among pairs with the same count, pick the smallest pair (min over (-count, pair)), not the first one seen"),
    ])


# -- 4. encoding ---------------------------------------------------------------------------------
ENCODE_WORD = Exercise(
    name="bpe_encode_word", reference=encode_word, cases=bank.encode_cases,
    mistakes=[
        Mistake("no end marker", bank.encode_no_eow, "start from the characters plus '</w>': merges like ('est', '</w>') need the end marker"),
        Mistake("reversed order", bank.encode_reversed, "replay the merges in the order they were learned (first merge first)"),
        Mistake("first occurrence only", bank.encode_first_only, "each merge must join every occurrence in the word, not only the first"),
    ])


# -- 5. decoding ---------------------------------------------------------------------------------
DECODE_IDS = Exercise(
    name="bpe_decode", reference=decode_ids, cases=bank.decode_cases,
    mistakes=[
        Mistake("drops </w>", lambda ids, vocab: "".join(vocab[i] for i in ids).replace(EOW, ""),
                "'</w>' marks the end of a word: turn it into a space, don't delete it"),
        Mistake("spaces between pieces", lambda ids, vocab: " ".join(vocab[i] for i in ids).replace(EOW, " "),
                "glue the pieces directly (''.join): spaces come only from '</w>'"),
        Mistake("strips the last space", lambda ids, vocab: decode_ids(ids, vocab).rstrip(" "),
                "keep the final space: the last '</w>' decodes to ' ' too ('lowest ')"),
    ])


# -- 6. WordPiece score --------------------------------------------------------------------------
WORDPIECE_SCORE = Exercise(
    name="wordpiece_score", reference=wordpiece_score, cases=bank.score_cases,
    mistakes=[
        Mistake("raw count", bank.score_raw_count, "that is BPE's criterion: divide the pair count by count(a) x count(b)"),
        Mistake("sum", bank.score_sum, "divide by the product count(a) x count(b), not the sum"),
        Mistake("unweighted", bank.score_unweighted, "count symbols and pairs with each word's frequency (newest x6 contributes 6)"),
    ])


# -- 7. Viterbi for Unigram ----------------------------------------------------------------------
VITERBI = Exercise(
    name="unigram_viterbi", reference=viterbi_segment, cases=bank.viterbi_cases,
    mistakes=[
        Mistake("greedy", bank.greedy_longest, "taking the longest piece first is greedy: compare every split point with dynamic programming"),
        Mistake("sum", bank.max_sum, "a split's probability is the product of its pieces' probabilities (add log-probabilities), not their sum"),
        Mistake("weakest piece", bank.max_single_piece, "score the whole split (sum of log-probabilities), not only its least likely piece"),
    ])

EXERCISES = {ex.name: ex for ex in (COUNT_PAIRS, MERGE_PAIR, TRAIN_BPE, ENCODE_WORD, DECODE_IDS, WORDPIECE_SCORE, VITERBI)}


def check_bpe_count_pairs(fn):
    """Check ``count_pairs(words)``."""
    return COUNT_PAIRS.check(fn)


def check_bpe_merge_pair(fn):
    """Check ``merge_pair(words, pair)``."""
    return MERGE_PAIR.check(fn)


def check_bpe_train(fn):
    """Check ``train_bpe(word_counts, n_merges)``."""
    return TRAIN_BPE.check(fn)


def check_bpe_encode_word(fn):
    """Check ``encode_word(word, merges)``."""
    return ENCODE_WORD.check(fn)


def check_bpe_decode(fn):
    """Check ``decode_ids(ids, vocab)``."""
    return DECODE_IDS.check(fn)


def check_wordpiece_score(fn):
    """Check ``wordpiece_score(words, pair)``."""
    return WORDPIECE_SCORE.check(fn)


def check_unigram_viterbi(fn):
    """Check ``viterbi_segment(word, probs)``."""
    return VITERBI.check(fn)
