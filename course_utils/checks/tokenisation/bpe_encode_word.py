"""Exercise ``encode_word(word, merges)``: the BPE pieces of one word, replaying the learned merges.

The word starts as its characters followed by ``'</w>'``, as in training; each merge, in the order it
was learned, joins every left-to-right occurrence of its pair. The answer is the list of pieces.
"""

from __future__ import annotations

import random
import re

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.tokenisation._cases import merge, random_counts, keyed_letters
from course_utils.tokenisation import bpe
from course_utils.tokenisation.bpe import EOW, WORKED_CORPUS, encode_word, train_bpe


def encode_cases(seed: int) -> list[Case]:
    """Three words with the 5 worked merges, three words of a seeded random corpus with its 6 merges, then a
    word where two merges compete for a letter."""
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
    a, b, c = rng.sample("abcdefghijklmnopqrstuvwxyz", 3)
    cases.append(Case(  # the merges compete for the middle letter: the one learned first wins
        f"merges [({b!r}, {c!r}), ({a!r}, {b!r})] on {a + b + c!r}: the merges compete for {b!r}",
        (a + b + c, [(b, c), (a, b)]),
    ))
    return cases


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no end marker", "start from the characters plus '</w>': merges like ('est', '</w>') need the end marker")
def encode_no_eow(word, merges):
    symbols = tuple(word)
    for pair in merges:
        symbols = merge(symbols, pair)
    return list(symbols)


@bank.mistake(
    "merges in any order",
    "when two merges could apply to the same symbols, the one learned first wins: go through the merges in "
    "their order, not through the word looking for any known pair",
)
def encode_any_order(word, merges):
    """Joins the leftmost neighbouring pair that is any merge, whatever its rank."""
    known, symbols = {tuple(p) for p in merges}, [*word, EOW]
    while True:
        i = next((i for i, pair in enumerate(zip(symbols, symbols[1:])) if pair in known), None)
        if i is None:
            return symbols
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]


@bank.mistake("reversed order", "replay the merges in the order they were learned (first merge first)")
def encode_reversed(word, merges):
    return encode_word(word, list(merges)[::-1])


@bank.mistake("first occurrence only", "each merge must join every occurrence in the word, not only the first")
def encode_first_only(word, merges):
    symbols = (*word, EOW)
    for pair in merges:
        symbols = merge(symbols, pair, first_only=True)
    return list(symbols)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("lowest rank first, GPT-2 style")
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


@bank.alternative("regex on the space-joined symbols")
def encode_with_regex(word, merges):
    text = " ".join([*word, EOW])
    for a, b in merges:
        text = re.sub(r"(?<!\S)" + re.escape(f"{a} {b}") + r"(?!\S)", a + b, text)
    return text.split(" ")


@bank.alternative("merge_pair on a one-word corpus")
def encode_with_merge_pair(word, merges):
    """Reuses the course's ``merge_pair`` on a one-word corpus."""
    words = {tuple(word) + (EOW,): 1}
    for pair in merges:
        words = bpe.merge_pair(words, pair)
    return list(next(iter(words)))


ENCODE_WORD = Exercise(
    name="bpe_encode_word",
    reference=encode_word,
    cases=keyed_letters(encode_cases),
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Start from the word's characters followed by the end-of-word marker, exactly as in training.",
        "Go through the learned merges in their order; each one joins every left-to-right "
        "occurrence of its pair in the current symbols, the same join as in the merge exercise.",
    ],
    tolerance="exact",
)
EXERCISES = {ENCODE_WORD.name: ENCODE_WORD}


def check_bpe_encode_word(fn):
    """Check ``encode_word(word, merges)``."""
    return ENCODE_WORD.check(fn)
