"""Accepted alternatives for the classic tokenisation exercises of notebook 01 (``checks/tokenisation.py``).

Each function is a correct answer written differently from the reference (another data structure,
a regular expression, recursion, products instead of log-probabilities, a library call the
notebook allows...). ``tests/test_checks.py`` requires the check to accept every one of them.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter, defaultdict
from fractions import Fraction

from course_utils.tokenisation import bpe
from course_utils.tokenisation.bpe import EOW


# -- 1. pair counting ----------------------------------------------------------------------------
def pairs_with_pairwise(words):
    counts = Counter()
    for symbols, n in words.items():
        for pair in itertools.pairwise(symbols):
            counts[pair] += n
    return counts  # a Counter is a dict


def pairs_by_index(words):
    counts = defaultdict(int)
    for symbols, n in words.items():
        for i in range(len(symbols) - 1):
            counts[symbols[i], symbols[i + 1]] += n
    return dict(counts)


def pairs_by_summing_counters(words):
    return dict(
        sum((Counter({pair: n}) for symbols, n in words.items() for pair in zip(symbols, symbols[1:])), Counter())
    )


# -- 2. one merge --------------------------------------------------------------------------------
def merge_with_regex(words, pair):
    """Sennrich et al.'s way: join the symbols with spaces and replace the bigram between word boundaries."""
    bigram = re.compile(r"(?<!\S)" + re.escape(" ".join(pair)) + r"(?!\S)")
    out = Counter()
    for symbols, n in words.items():
        out[tuple(bigram.sub("".join(pair), " ".join(symbols)).split(" "))] += n
    return dict(out)


def merge_with_a_stack(words, pair):
    out = defaultdict(int)
    for symbols, n in words.items():
        merged, just_joined = [], False
        for s in symbols:
            if merged and not just_joined and merged[-1] == pair[0] and s == pair[1]:
                merged[-1] = pair[0] + pair[1]
                just_joined = True
            else:
                merged.append(s)
                just_joined = False
        out[tuple(merged)] += n
    return dict(out)


def merge_recursively(words, pair):
    def join(symbols):
        if len(symbols) < 2:
            return symbols
        if (symbols[0], symbols[1]) == tuple(pair):
            return (symbols[0] + symbols[1],) + join(symbols[2:])
        return (symbols[0],) + join(symbols[1:])

    out = Counter()
    for symbols, n in words.items():
        out[join(tuple(symbols))] += n
    return dict(out)


# -- 3. the training loop ------------------------------------------------------------------------
def train_sorting_pairs(word_counts, n_merges):
    words = bpe.split_corpus(word_counts)
    merges = []
    while len(merges) < n_merges:
        ranked = sorted(bpe.count_pairs(words).items(), key=lambda kv: (-kv[1], kv[0]))
        if not ranked:
            break
        merges.append(ranked[0][0])
        words = bpe.merge_pair(words, ranked[0][0])
    return merges


def train_top_count_then_smallest(word_counts, n_merges):
    words = bpe.split_corpus(word_counts)
    merges = []
    for _ in range(n_merges):
        pairs = pairs_by_index(words)
        if not pairs:
            break
        top = max(pairs.values())
        best = min(p for p, c in pairs.items() if c == top)
        merges.append(best)
        words = merge_with_regex(words, best)
    return merges


def train_from_scratch(word_counts, n_merges):
    """No course helpers: its own splitting, counting and merging."""
    words = {tuple(w) + (EOW,): n for w, n in word_counts.items()}
    merges = []
    for _ in range(n_merges):
        pairs = pairs_with_pairwise(words)
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        merges.append(best)
        words = merge_recursively(words, best)
    return merges


# -- 4. encoding ---------------------------------------------------------------------------------
def encode_lowest_rank_first(word, merges):
    """GPT-2's way: repeatedly join the adjacent pair that was learned earliest."""
    rank = {tuple(p): i for i, p in enumerate(merges)}
    symbols = list(word) + [EOW]
    while True:
        ranked = [(rank[(a, b)], i) for i, (a, b) in enumerate(zip(symbols, symbols[1:])) if (a, b) in rank]
        if not ranked:
            return symbols
        _, i = min(ranked)
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]


def encode_with_regex(word, merges):
    text = " ".join([*word, EOW])
    for a, b in merges:
        text = re.sub(r"(?<!\S)" + re.escape(f"{a} {b}") + r"(?!\S)", a + b, text)
    return text.split(" ")


def encode_with_merge_pair(word, merges):
    """Reuses the course's ``merge_pair`` on a one-word corpus."""
    words = {tuple(word) + (EOW,): 1}
    for pair in merges:
        words = bpe.merge_pair(words, pair)
    return list(next(iter(words)))


# -- 5. decoding ---------------------------------------------------------------------------------
def decode_piece_by_piece(ids, vocab):
    text = ""
    for i in ids:
        text += vocab[i].replace(EOW, " ")
    return text


def decode_with_map(ids, vocab):
    return "".join(map(vocab.__getitem__, ids)).replace(EOW, " ")


def decode_with_regex(ids, vocab):
    return re.sub(re.escape(EOW), " ", "".join([vocab[i] for i in ids]))


# -- 6. WordPiece score --------------------------------------------------------------------------
def score_with_counters(words, pair):
    singles, pairs = Counter(), Counter()
    for symbols, n in words.items():
        for s in symbols:
            singles[s] += n
        for p in zip(symbols, symbols[1:]):
            pairs[p] += n
    together = pairs[tuple(pair)]
    return together / (singles[pair[0]] * singles[pair[1]]) if together else 0.0


def score_as_fraction(words, pair):
    together = bpe.count_pairs(words).get(tuple(pair), 0)
    if not together:
        return Fraction(0)
    count = lambda s: sum(n * symbols.count(s) for symbols, n in words.items())  # noqa: E731
    return Fraction(together, count(pair[0]) * count(pair[1]))


def score_in_logs(words, pair):
    together = bpe.count_pairs(words).get(tuple(pair), 0)
    if not together:
        return 0
    singles = Counter()
    for symbols, n in words.items():
        singles.update({s: n * symbols.count(s) for s in set(symbols)})
    return math.exp(math.log(together) - math.log(singles[pair[0]]) - math.log(singles[pair[1]]))


# -- 7. Viterbi ----------------------------------------------------------------------------------
def viterbi_with_products(word, probs):
    """Multiplies probabilities directly (fine for short words) and stores whole splits."""
    best = {0: (1.0, [])}
    for end in range(1, len(word) + 1):
        options = [
            (best[b][0] * probs[word[b:end]], best[b][1] + [word[b:end]])
            for b in range(end)
            if b in best and word[b:end] in probs
        ]
        if options:
            best[end] = max(options, key=lambda o: o[0])
    return best[len(word)][1]


def viterbi_top_down(word, probs):
    """Memoised recursion over suffixes: the best split of word[i:]."""

    @functools.lru_cache(maxsize=None)
    def best(i):
        if i == len(word):
            return 0.0, ()
        options = []
        for j in range(i + 1, len(word) + 1):
            if word[i:j] in probs:
                score, rest = best(j)
                options.append((math.log(probs[word[i:j]]) + score, (word[i:j],) + rest))
        return max(options, default=(-math.inf, ()))

    return list(best(0)[1])


def viterbi_backwards(word, probs):
    """The same dynamic programme run from the end of the word, with negative log-probabilities."""
    n = len(word)
    cost = [math.inf] * n + [0.0]
    nxt = [n] * (n + 1)
    for start in range(n - 1, -1, -1):
        for end in range(start + 1, n + 1):
            piece = word[start:end]
            if piece in probs and cost[end] - math.log(probs[piece]) < cost[start]:
                cost[start], nxt[start] = cost[end] - math.log(probs[piece]), end
    pieces, i = [], 0
    while i < n:
        pieces.append(word[i : nxt[i]])
        i = nxt[i]
    return pieces
