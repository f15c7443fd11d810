"""Exercise ``count_pairs(words)``: how often each pair of neighbouring symbols occurs in a split corpus.

``words`` maps a tuple of symbols (ending in ``'</w>'``) to the word's count; the answer maps each pair
to its total, every occurrence adding the count of its word.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.tokenisation._cases import corpora, keyed_letters
from course_utils.tokenisation.bpe import count_pairs, split_corpus

bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("unweighted", "each word's pairs must be counted as many times as the word occurs: add its count, not 1")
def pairs_unweighted(words):
    return dict(Counter(p for s in words for p in zip(s, s[1:])))


@bank.mistake("once per word", "a pair that occurs twice in one word (a a a a) counts twice: don't use a set of pairs")
def pairs_once_per_word(words):
    out = Counter()
    for s, c in words.items():
        for p in set(zip(s, s[1:])):
            out[p] += c
    return dict(out)


@bank.mistake(
    "skips the last pair",
    "the last pair of each word (the one ending in '</w>') is missing: "
    "every adjacent pair counts, up to the last two symbols",
)
def pairs_skip_last(words):
    out = Counter()
    for s, c in words.items():
        for p in list(zip(s, s[1:]))[:-1]:
            out[p] += c
    return dict(out)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("itertools.pairwise into a Counter")
def pairs_with_pairwise(words):
    counts = Counter()
    for symbols, n in words.items():
        for pair in itertools.pairwise(symbols):
            counts[pair] += n
    return counts  # a Counter is a dict


@bank.alternative("index loop into a defaultdict")
def pairs_by_index(words):
    counts = defaultdict(int)
    for symbols, n in words.items():
        for i in range(len(symbols) - 1):
            counts[symbols[i], symbols[i + 1]] += n
    return dict(counts)


@bank.alternative("sum of Counters")
def pairs_by_summing_counters(words):
    return dict(
        sum((Counter({pair: n}) for symbols, n in words.items() for pair in zip(symbols, symbols[1:])), Counter())
    )


COUNT_PAIRS = Exercise(
    name="bpe_count_pairs",
    reference=count_pairs,
    cases=keyed_letters(lambda seed: [Case(label, (split_corpus(wc),)) for label, wc in corpora(seed)]),
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Visit every word with its count, and inside it every pair of neighbouring symbols; each "
        "pair you see adds the word's count (not 1) to that pair's total.",
        "A word of n symbols has n - 1 neighbouring pairs, and the same pair may occur twice in one "
        "word (a a a has two). Zipping the symbols with themselves shifted by one gives all of them.",
    ],
    tolerance="exact",
)
EXERCISES = {COUNT_PAIRS.name: COUNT_PAIRS}


def check_bpe_count_pairs(fn):
    """Check ``count_pairs(words)``."""
    return COUNT_PAIRS.check(fn)
