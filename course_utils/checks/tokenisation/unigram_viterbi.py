"""Exercise ``viterbi_segment(word, probs)``: the most probable split of a word into Unigram pieces.

A split's probability is the product of its pieces' probabilities (a sum of log-probabilities); the
answer is the list of pieces. When two splits are equally probable, either passes.
"""

from __future__ import annotations

import functools
import math
import random

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.tokenisation._cases import keyed_letters
from course_utils.tokenisation.unigram import viterbi_segment


def viterbi_cases(seed: int) -> list[Case]:
    """Three words where greedy, summed or weakest-piece scoring goes wrong, then three seeded random ones."""
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


def _run_viterbi(fn, case: Case):
    """The student's split, or the reference's when the two are equally probable (ties such as
    bb.bbb and bbb.bb are both right), so only a less probable or invalid split fails."""
    word, probs = case.args
    pieces = list(fn(word, probs))
    best = viterbi_segment(word, probs)
    valid = "".join(map(str, pieces)) == word and all(p in probs for p in pieces)
    if valid and math.isclose(
        sum(math.log(probs[p]) for p in pieces), sum(math.log(probs[p]) for p in best), rel_tol=1e-9
    ):
        return best
    return pieces


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("greedy", "taking the longest piece first is greedy: compare every split point with dynamic programming")
def greedy_longest(word, probs):
    pieces, i = [], 0
    while i < len(word):
        j = max(j for j in range(i + 1, len(word) + 1) if word[i:j] in probs)
        pieces.append(word[i:j])
        i = j
    return pieces


@bank.mistake(
    "sum",
    "a split's probability is the product of its pieces' probabilities (add log-probabilities), not their sum",
)
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


@bank.mistake("weakest piece", "score the whole split (sum of log-probabilities), not only its least likely piece")
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


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("products instead of logs, whole splits stored")
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


@bank.alternative("memoised recursion over suffixes")
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


@bank.alternative("backwards, with costs")
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


VITERBI = Exercise(
    name="unigram_viterbi",
    reference=viterbi_segment,
    cases=keyed_letters(viterbi_cases),
    run=_run_viterbi,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Solve every prefix of the word once: the best split of the first i letters is some best "
        "split of a shorter prefix plus one vocabulary piece that ends at letter i.",
        "Keep two arrays: the best log-probability of each prefix (0 for the empty one, minus "
        "infinity elsewhere) and where its last piece starts; fill them left to right, then walk "
        "back from the end to read off the pieces.",
    ],
    tolerance="exact",
)
EXERCISES = {VITERBI.name: VITERBI}


def check_unigram_viterbi(fn):
    """Check ``viterbi_segment(word, probs)``."""
    return VITERBI.check(fn)
