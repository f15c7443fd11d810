"""Checks for notebook 01 (tokenisation): seven exercises on classic BPE, WordPiece and Unigram.

Each check runs the student's function on the worked corpus (low x5, lower x2, newest x6,
widest x3) and on seeded random corpora over a small alphabet, compares with the reference in
``course_utils.tokenisation``, and names the likely mistake.
"""

from __future__ import annotations

import math
import random
from collections import Counter

from course_utils.checks.core import Case, Exercise, Mistake
from course_utils.tokenisation.bpe import (EOW, WORKED_CORPUS, build_vocab, count_pairs, decode_ids, encode_word,
                                           merge_pair, split_corpus, train_bpe)
from course_utils.tokenisation.unigram import viterbi_segment
from course_utils.tokenisation.wordpiece import count_symbols, wordpiece_score


def _random_counts(rng: random.Random, n_words: int = 6, alphabet: str = "abcd") -> dict[str, int]:
    words = {}
    while len(words) < n_words:
        words["".join(rng.choice(alphabet) for _ in range(rng.randint(2, 7)))] = rng.randint(1, 9)
    return words


def _corpora(seed: int) -> list[tuple[str, dict[str, int]]]:
    rng = random.Random(seed)
    return [("the worked corpus", dict(WORKED_CORPUS)),
            ("repeated pairs: aaaa x3, abab x2, ba x4", {"aaaa": 3, "abab": 2, "ba": 4}),
            (f"a random corpus (seed {seed})", _random_counts(rng)),
            (f"another random corpus (seed {seed})", _random_counts(rng, 8, "abc"))]


def _merge(symbols, pair, first_only=False):
    out, i, done = [], 0, False
    while i < len(symbols):
        if not done and i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == tuple(pair):
            out.append(symbols[i] + symbols[i + 1])
            i += 2
            done = first_only
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


# -- 1. pair counting ----------------------------------------------------------------------------
def _pairs_unweighted(words):
    return dict(Counter(p for s in words for p in zip(s, s[1:])))


def _pairs_once_per_word(words):
    out = Counter()
    for s, c in words.items():
        for p in set(zip(s, s[1:])):
            out[p] += c
    return dict(out)


def _pairs_skip_last(words):
    out = Counter()
    for s, c in words.items():
        for p in list(zip(s, s[1:]))[:-1]:
            out[p] += c
    return dict(out)


COUNT_PAIRS = Exercise(
    name="bpe_count_pairs", reference=count_pairs,
    cases=lambda seed: [Case(label, (split_corpus(wc),)) for label, wc in _corpora(seed)],
    mistakes=[
        Mistake("unweighted", _pairs_unweighted, "each word's pairs must be counted as many times as the word occurs: add its count, not 1"),
        Mistake("once per word", _pairs_once_per_word, "a pair that occurs twice in one word (a a a a) counts twice: don't use a set of pairs"),
        Mistake("skips the last pair", _pairs_skip_last, "the last pair of each word (the one ending in '</w>') is missing: zip(symbols, symbols[1:]) covers them all"),
    ])


# -- 2. one merge --------------------------------------------------------------------------------
def _merge_first_only(words, pair):
    out = Counter()
    for s, c in words.items():
        out[_merge(s, pair, first_only=True)] += c
    return dict(out)


def _merge_right_to_left(words, pair):
    out = Counter()
    for s, c in words.items():
        out[tuple(p[::-1] for p in _merge(tuple(x[::-1] for x in s[::-1]), tuple(x[::-1] for x in pair[::-1]))[::-1])] += c
    return dict(out)


def _merge_overwrites(words, pair):
    return {_merge(s, pair): c for s, c in words.items()}


def _merge_cases(seed: int) -> list[Case]:
    cases = [Case("worked corpus, merge ('e', 's')", (split_corpus(WORKED_CORPUS), ("e", "s"))),
             Case("('a','a','a','a') x3 and ('a','a','a') x1, merge ('a', 'a')", ({("a",) * 4 + (EOW,): 3, ("a",) * 3 + (EOW,): 1}, ("a", "a"))),
             Case("('ab','c') x2 and ('a','b','c') x3, merge ('a', 'b')", ({("ab", "c", EOW): 2, ("a", "b", "c", EOW): 3}, ("a", "b")))]
    for label, wc in _corpora(seed)[2:]:
        words = split_corpus(wc)
        cases.append(Case(f"{label}, its most frequent pair", (words, max(sorted(count_pairs(words).items()), key=lambda kv: kv[1])[0])))
    return cases


MERGE_PAIR = Exercise(
    name="bpe_merge_pair", reference=merge_pair, cases=_merge_cases,
    mistakes=[
        Mistake("first occurrence only", _merge_first_only, "only the first occurrence in each word was merged: keep scanning after a merge"),
        Mistake("right to left", _merge_right_to_left, "overlapping matches (a a a) must be merged left to right: ('aa', 'a'), not ('a', 'aa')"),
        Mistake("overwrites counts", _merge_overwrites, "two words that become the same symbols must have their counts added, not overwritten"),
    ])


# -- 3. the training loop ------------------------------------------------------------------------
def _train_with(word_counts, n_merges, pick, weighted=True, recount=True):
    words = split_corpus(word_counts)
    if not weighted:
        words = {s: 1 for s in words}
    merges, pairs = [], count_pairs(words)
    for _ in range(n_merges):
        if recount:
            pairs = count_pairs(words)
        pairs = {p: c for p, c in pairs.items() if p not in merges}
        if not pairs:
            break
        pair = pick(pairs)
        merges.append(pair)
        words = merge_pair(words, pair)
    return merges


def _first_seen_tie(pairs):
    return max(pairs, key=pairs.get)


def _smallest_tie(pairs):
    return min(pairs, key=lambda p: (-pairs[p], p))


TRAIN_BPE = Exercise(
    name="bpe_train", reference=train_bpe,
    cases=lambda seed: [Case(f"{label}, {n} merges", (wc, n)) for (label, wc), n in zip(_corpora(seed), (5, 3, 6, 8))],
    mistakes=[
        Mistake("unweighted", lambda wc, n: _train_with(wc, n, _smallest_tie, weighted=False),
                "pairs must be counted with each word's frequency (low x5 counts 5 times)"),
        Mistake("no recount", lambda wc, n: _train_with(wc, n, _smallest_tie, recount=False),
                "recount the pairs after every merge: merging changes which pairs exist"),
        Mistake("tie-break", lambda wc, n: _train_with(wc, n, _first_seen_tie),
                "among pairs with the same count, pick the smallest pair (min over (-count, pair)), not the first one seen"),
    ])


# -- 4. encoding ---------------------------------------------------------------------------------
def _encode_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    merges = train_bpe(WORKED_CORPUS, 5)
    cases = [Case("'lowest' with the 5 worked merges", ("lowest", merges)),
             Case("'newer' with the 5 worked merges", ("newer", merges)),
             Case("'lowlowest' with the 5 worked merges", ("lowlowest", merges))]
    wc = _random_counts(rng)
    merges = train_bpe(wc, 6)
    for word in list(wc)[:3]:
        cases.append(Case(f"{word!r} with 6 merges learned on a random corpus (seed {seed})", (word, merges)))
    return cases


def _encode_no_eow(word, merges):
    symbols = tuple(word)
    for pair in merges:
        symbols = _merge(symbols, pair)
    return list(symbols)


def _encode_reversed(word, merges):
    return encode_word(word, list(merges)[::-1])


def _encode_first_only(word, merges):
    symbols = (*word, EOW)
    for pair in merges:
        symbols = _merge(symbols, pair, first_only=True)
    return list(symbols)


ENCODE_WORD = Exercise(
    name="bpe_encode_word", reference=encode_word, cases=_encode_cases,
    mistakes=[
        Mistake("no end marker", _encode_no_eow, "start from the characters plus '</w>': merges like ('est', '</w>') need the end marker"),
        Mistake("reversed order", _encode_reversed, "replay the merges in the order they were learned (first merge first)"),
        Mistake("first occurrence only", _encode_first_only, "each merge must join every occurrence in the word, not only the first"),
    ])


# -- 5. decoding ---------------------------------------------------------------------------------
def _decode_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    merges = train_bpe(WORKED_CORPUS, 5)
    vocab = build_vocab(WORKED_CORPUS, merges)
    cases = []
    for words in (["lowest", "newer"], ["low"], [rng.choice(["widest", "lower", "newest"]) for _ in range(3)]):
        ids = [vocab.index(p) for w in words for p in encode_word(w, merges)]
        cases.append(Case(f"ids of {' '.join(words)!r}", (ids, vocab)))
    return cases


DECODE_IDS = Exercise(
    name="bpe_decode", reference=decode_ids, cases=_decode_cases,
    mistakes=[
        Mistake("drops </w>", lambda ids, vocab: "".join(vocab[i] for i in ids).replace(EOW, ""),
                "'</w>' marks the end of a word: turn it into a space, don't delete it"),
        Mistake("spaces between pieces", lambda ids, vocab: " ".join(vocab[i] for i in ids).replace(EOW, " "),
                "glue the pieces directly (''.join): spaces come only from '</w>'"),
        Mistake("strips the last space", lambda ids, vocab: decode_ids(ids, vocab).rstrip(" "),
                "keep the final space: the last '</w>' decodes to ' ' too ('lowest ')"),
    ])


# -- 6. WordPiece score --------------------------------------------------------------------------
def _score_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    worked = split_corpus(WORKED_CORPUS)
    cases = [Case("worked corpus, ('e', 's')", (worked, ("e", "s"))),
             Case("worked corpus, ('i', 'd')", (worked, ("i", "d")))]
    for label, wc in _corpora(seed)[2:]:
        words = split_corpus(wc)
        cases.append(Case(f"{label}, a pair in it", (words, rng.choice(sorted(count_pairs(words))))))
    return cases


def _score_unweighted(words, pair):
    return wordpiece_score({s: 1 for s in words}, pair)


def _score_raw_count(words, pair):
    return float(count_pairs(words).get(tuple(pair), 0))


def _score_sum(words, pair):
    sym = count_symbols(words)
    return count_pairs(words).get(tuple(pair), 0) / (sym[pair[0]] + sym[pair[1]])


WORDPIECE_SCORE = Exercise(
    name="wordpiece_score", reference=wordpiece_score, cases=_score_cases,
    mistakes=[
        Mistake("raw count", _score_raw_count, "that is BPE's criterion: divide the pair count by count(a) x count(b)"),
        Mistake("sum", _score_sum, "divide by the product count(a) x count(b), not the sum"),
        Mistake("unweighted", _score_unweighted, "count symbols and pairs with each word's frequency (newest x6 contributes 6)"),
    ])


# -- 7. Viterbi for Unigram ----------------------------------------------------------------------
def _viterbi_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    probs = {"low": 0.04, "est": 0.03, "lo": 0.01, "west": 0.005, **{c: 0.001 for c in "lowestn"}}
    cases = [Case("'lowest' with low .04, est .03, lo .01, west .005, letters .001", ("lowest", probs)),
             Case("'abcd' where a.bcd beats the greedy abc.d", ("abcd", {"a": 0.2, "b": 0.01, "c": 0.01, "d": 0.01, "abc": 0.02, "bcd": 0.3})),
             Case("'abc' where abc (0.2) beats a.bc (0.35 x 0.35) and a.b.c", ("abc", {"a": 0.35, "b": 0.3, "c": 0.3, "bc": 0.35, "abc": 0.2}))]
    for k in range(3):
        word = "".join(rng.choice("abc") for _ in range(rng.randint(5, 9)))
        pieces = {word[i:j] for i in range(len(word)) for j in range(i + 1, min(len(word), i + 4) + 1)}
        chosen = [p for p in sorted(pieces) if len(p) == 1 or rng.random() < 0.6]
        weights = [rng.random() for _ in chosen]
        cases.append(Case(f"random word {word!r} and {len(chosen)} pieces (seed {seed})",
                          (word, {p: w / sum(weights) for p, w in zip(chosen, weights)})))
    return cases


def _greedy_longest(word, probs):
    pieces, i = [], 0
    while i < len(word):
        j = max(j for j in range(i + 1, len(word) + 1) if word[i:j] in probs)
        pieces.append(word[i:j])
        i = j
    return pieces


def _max_sum(word, probs):
    best = {0: (0.0, [])}
    for end in range(1, len(word) + 1):
        options = [(best[b][0] + probs[word[b:end]], best[b][1] + [word[b:end]]) for b in range(end) if word[b:end] in probs and b in best]
        if options:
            best[end] = max(options, key=lambda o: o[0])
    return best[len(word)][1]


def _max_single_piece(word, probs):
    best = {0: (math.inf, [])}
    for end in range(1, len(word) + 1):
        options = [(min(best[b][0], probs[word[b:end]]), best[b][1] + [word[b:end]]) for b in range(end) if word[b:end] in probs and b in best]
        if options:
            best[end] = max(options, key=lambda o: o[0])
    return best[len(word)][1]


VITERBI = Exercise(
    name="unigram_viterbi", reference=viterbi_segment, cases=_viterbi_cases,
    mistakes=[
        Mistake("greedy", _greedy_longest, "taking the longest piece first is greedy: compare every split point with dynamic programming"),
        Mistake("sum", _max_sum, "a split's probability is the product of its pieces' probabilities (add log-probabilities), not their sum"),
        Mistake("weakest piece", _max_single_piece, "score the whole split (sum of log-probabilities), not only its least likely piece"),
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
