"""Inputs and wrong answers for the tokenisation checks (``checks/tokenisation.py``).

Case builders use the worked corpus (low x5, lower x2, newest x6, widest x3) and seeded random
corpora over a small alphabet; each ``_name`` below that is not a case builder is one typical
mistake, run by the check to recognise a student's wrong output. Nothing here is graded directly.
"""

from __future__ import annotations

import math
import random
from collections import Counter

from course_utils.checks.core import Case
from course_utils.tokenisation.bpe import (
    EOW,
    WORKED_CORPUS,
    build_vocab,
    count_pairs,
    encode_word,
    merge_pair,
    split_corpus,
    train_bpe,
)
from course_utils.tokenisation.wordpiece import count_symbols, wordpiece_score


def random_counts(rng: random.Random, n_words: int = 6, alphabet: str = "abcd") -> dict[str, int]:
    words = {}
    while len(words) < n_words:
        words["".join(rng.choice(alphabet) for _ in range(rng.randint(2, 7)))] = rng.randint(1, 9)
    return words


def corpora(seed: int) -> list[tuple[str, dict[str, int]]]:
    rng = random.Random(seed)
    return [
        ("the worked corpus", dict(WORKED_CORPUS)),
        ("repeated pairs: aaaa x3, abab x2, ba x4", {"aaaa": 3, "abab": 2, "ba": 4}),
        (f"a random corpus (seed {seed})", random_counts(rng)),
        (f"another random corpus (seed {seed})", random_counts(rng, 8, "abc")),
    ]


def merge(symbols, pair, first_only=False):
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


def pairs_unweighted(words):
    return dict(Counter(p for s in words for p in zip(s, s[1:])))


def pairs_once_per_word(words):
    out = Counter()
    for s, c in words.items():
        for p in set(zip(s, s[1:])):
            out[p] += c
    return dict(out)


def pairs_skip_last(words):
    out = Counter()
    for s, c in words.items():
        for p in list(zip(s, s[1:]))[:-1]:
            out[p] += c
    return dict(out)


def merge_first_only(words, pair):
    out = Counter()
    for s, c in words.items():
        out[merge(s, pair, first_only=True)] += c
    return dict(out)


def merge_right_to_left(words, pair):
    out = Counter()
    for s, c in words.items():
        out[
            tuple(p[::-1] for p in merge(tuple(x[::-1] for x in s[::-1]), tuple(x[::-1] for x in pair[::-1]))[::-1])
        ] += c
    return dict(out)


def merge_overwrites(words, pair):
    return {merge(s, pair): c for s, c in words.items()}


def merge_cases(seed: int) -> list[Case]:
    cases = [
        Case("worked corpus, merge ('e', 's')", (split_corpus(WORKED_CORPUS), ("e", "s"))),
        Case(
            "('a','a','a','a') x3 and ('a','a','a') x1, merge ('a', 'a')",
            ({("a",) * 4 + (EOW,): 3, ("a",) * 3 + (EOW,): 1}, ("a", "a")),
        ),
        Case(
            "('ab','c') x2 and ('a','b','c') x3, merge ('a', 'b')",
            ({("ab", "c", EOW): 2, ("a", "b", "c", EOW): 3}, ("a", "b")),
        ),
    ]
    for label, wc in corpora(seed)[2:]:
        words = split_corpus(wc)
        cases.append(
            Case(
                f"{label}, its most frequent pair",
                (words, max(sorted(count_pairs(words).items()), key=lambda kv: kv[1])[0]),
            )
        )
    return cases


def train_with(word_counts, n_merges, pick, weighted=True, recount=True):
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


def first_seen_tie(pairs):
    return max(pairs, key=pairs.get)


def smallest_tie(pairs):
    return min(pairs, key=lambda p: (-pairs[p], p))


def encode_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    merges = train_bpe(WORKED_CORPUS, 5)
    cases = [
        Case("'lowest' with the 5 worked merges", ("lowest", merges)),
        Case("'newer' with the 5 worked merges", ("newer", merges)),
        Case("'lowlowest' with the 5 worked merges", ("lowlowest", merges)),
    ]
    wc = random_counts(rng)
    merges = train_bpe(wc, 6)
    for word in list(wc)[:3]:
        cases.append(Case(f"{word!r} with 6 merges learned on a random corpus (seed {seed})", (word, merges)))
    return cases


def encode_no_eow(word, merges):
    symbols = tuple(word)
    for pair in merges:
        symbols = merge(symbols, pair)
    return list(symbols)


def encode_reversed(word, merges):
    return encode_word(word, list(merges)[::-1])


def encode_first_only(word, merges):
    symbols = (*word, EOW)
    for pair in merges:
        symbols = merge(symbols, pair, first_only=True)
    return list(symbols)


def decode_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    merges = train_bpe(WORKED_CORPUS, 5)
    vocab = build_vocab(WORKED_CORPUS, merges)
    cases = []
    for words in (["lowest", "newer"], ["low"], [rng.choice(["widest", "lower", "newest"]) for _ in range(3)]):
        ids = [vocab.index(p) for w in words for p in encode_word(w, merges)]
        cases.append(Case(f"ids of {' '.join(words)!r}", (ids, vocab)))
    return cases


def score_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    worked = split_corpus(WORKED_CORPUS)
    cases = [
        Case("worked corpus, ('e', 's')", (worked, ("e", "s"))),
        Case("worked corpus, ('i', 'd')", (worked, ("i", "d"))),
    ]
    for label, wc in corpora(seed)[2:]:
        words = split_corpus(wc)
        cases.append(Case(f"{label}, a pair in it", (words, rng.choice(sorted(count_pairs(words))))))
    return cases


def score_unweighted(words, pair):
    return wordpiece_score({s: 1 for s in words}, pair)


def score_raw_count(words, pair):
    return float(count_pairs(words).get(tuple(pair), 0))


def score_sum(words, pair):
    sym = count_symbols(words)
    return count_pairs(words).get(tuple(pair), 0) / (sym[pair[0]] + sym[pair[1]])


def viterbi_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    probs = {"low": 0.04, "est": 0.03, "lo": 0.01, "west": 0.005, **{c: 0.001 for c in "lowestn"}}
    cases = [
        Case("'lowest' with low .04, est .03, lo .01, west .005, letters .001", ("lowest", probs)),
        Case(
            "'abcd' where a.bcd beats the greedy abc.d",
            ("abcd", {"a": 0.2, "b": 0.01, "c": 0.01, "d": 0.01, "abc": 0.02, "bcd": 0.3}),
        ),
        Case(
            "'abc' where abc (0.2) beats a.bc (0.35 x 0.35) and a.b.c",
            ("abc", {"a": 0.35, "b": 0.3, "c": 0.3, "bc": 0.35, "abc": 0.2}),
        ),
    ]
    for k in range(3):
        word = "".join(rng.choice("abc") for _ in range(rng.randint(5, 9)))
        pieces = {word[i:j] for i in range(len(word)) for j in range(i + 1, min(len(word), i + 4) + 1)}
        chosen = [p for p in sorted(pieces) if len(p) == 1 or rng.random() < 0.6]
        weights = [rng.random() for _ in chosen]
        cases.append(
            Case(
                f"random word {word!r} and {len(chosen)} pieces (seed {seed})",
                (word, {p: w / sum(weights) for p, w in zip(chosen, weights)}),
            )
        )
    return cases


def greedy_longest(word, probs):
    pieces, i = [], 0
    while i < len(word):
        j = max(j for j in range(i + 1, len(word) + 1) if word[i:j] in probs)
        pieces.append(word[i:j])
        i = j
    return pieces


def max_sum(word, probs):
    best = {0: (0.0, [])}
    for end in range(1, len(word) + 1):
        options = [
            (best[b][0] + probs[word[b:end]], best[b][1] + [word[b:end]])
            for b in range(end)
            if word[b:end] in probs and b in best
        ]
        if options:
            best[end] = max(options, key=lambda o: o[0])
    return best[len(word)][1]


def max_single_piece(word, probs):
    best = {0: (math.inf, [])}
    for end in range(1, len(word) + 1):
        options = [
            (min(best[b][0], probs[word[b:end]]), best[b][1] + [word[b:end]])
            for b in range(end)
            if word[b:end] in probs and b in best
        ]
        if options:
            best[end] = max(options, key=lambda o: o[0])
    return best[len(word)][1]
