"""Exercise ``wordpiece_score(words, pair)``: WordPiece's merge criterion for one pair of a split corpus.

The score is count(pair) / (count(a) x count(b)), every count weighted by its word's count, and 0 for
a pair that never occurs, also when its symbols never occur (0/0; the notebook states it). Any number
type passes (a float, a ``Fraction``), judged at float32 precision.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.tokenisation._cases import corpora, keyed_letters
from course_utils.tokenisation import bpe
from course_utils.tokenisation.bpe import WORKED_CORPUS, count_pairs, split_corpus
from course_utils.tokenisation.wordpiece import count_symbols, wordpiece_score


def score_cases(seed: int) -> list[Case]:
    """Four pairs of the worked corpus (two never adjacent), then a seeded pair of each of two random corpora."""
    rng = random.Random(seed)
    worked = split_corpus(WORKED_CORPUS)
    cases = [
        Case("worked corpus, ('e', 's')", (worked, ("e", "s"))),
        Case("worked corpus, ('i', 'd')", (worked, ("i", "d"))),
        Case("worked corpus, ('w', 'l'): both occur, never side by side (score 0)", (worked, ("w", "l"))),
        Case("worked corpus, ('x', 'q'): neither occurs (score 0)", (worked, ("x", "q"))),
    ]
    for label, wc in corpora(seed)[2:]:
        words = split_corpus(wc)
        cases.append(Case(f"{label}, a pair in it", (words, rng.choice(sorted(count_pairs(words))))))
    return cases


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("raw count", "that is BPE's criterion: divide the pair count by count(a) x count(b)")
def score_raw_count(words, pair):
    return float(count_pairs(words).get(tuple(pair), 0))


@bank.mistake("sum", "divide by the product count(a) x count(b), not the sum")
def score_sum(words, pair):
    sym = count_symbols(words)
    return count_pairs(words).get(tuple(pair), 0) / (sym[pair[0]] + sym[pair[1]])


@bank.mistake("unweighted", "count symbols and pairs with each word's frequency (newest x6 contributes 6)")
def score_unweighted(words, pair):
    return wordpiece_score({s: 1 for s in words}, pair)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("two Counters")
def score_with_counters(words, pair):
    singles, pairs = Counter(), Counter()
    for symbols, n in words.items():
        for s in symbols:
            singles[s] += n
        for p in zip(symbols, symbols[1:]):
            pairs[p] += n
    together = pairs[tuple(pair)]
    return together / (singles[pair[0]] * singles[pair[1]]) if together else 0.0


@bank.alternative("an exact Fraction")
def score_as_fraction(words, pair):
    together = bpe.count_pairs(words).get(tuple(pair), 0)
    if not together:
        return Fraction(0)
    count = lambda s: sum(n * symbols.count(s) for symbols, n in words.items())  # noqa: E731
    return Fraction(together, count(pair[0]) * count(pair[1]))


@bank.alternative("through logarithms")
def score_in_logs(words, pair):
    together = bpe.count_pairs(words).get(tuple(pair), 0)
    if not together:
        return 0
    singles = Counter()
    for symbols, n in words.items():
        singles.update({s: n * symbols.count(s) for s in set(symbols)})
    return math.exp(math.log(together) - math.log(singles[pair[0]]) - math.log(singles[pair[1]]))


@bank.alternative("the formula guarded by its denominator (0 when a symbol never occurs, as the notebook states)")
def score_guarded(words, pair):
    singles = Counter()
    for symbols, n in words.items():
        for s in symbols:
            singles[s] += n
    denominator = singles[pair[0]] * singles[pair[1]]
    return bpe.count_pairs(words).get(tuple(pair), 0) / denominator if denominator else 0.0


WORDPIECE_SCORE = Exercise(
    name="wordpiece_score",
    reference=wordpiece_score,
    cases=keyed_letters(score_cases),
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "You need three weighted counts: how often the pair occurs, and how often each of its two "
        "symbols occurs on its own anywhere in the corpus.",
        "Count single symbols the way the pairs are counted, each occurrence adding its word's "
        "count; then divide the pair's count by the product of the two symbol counts (0 if the "
        "pair never occurs).",
    ],
    tolerance="float32",
)
EXERCISES = {WORDPIECE_SCORE.name: WORDPIECE_SCORE}


def check_wordpiece_score(fn):
    """Check ``wordpiece_score(words, pair)``."""
    return WORDPIECE_SCORE.check(fn)
