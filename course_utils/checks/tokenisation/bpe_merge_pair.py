"""Exercise ``merge_pair(words, pair)``: join every left-to-right occurrence of ``pair`` in a split corpus.

Overlaps join from the left (``a a a`` becomes ``aa a``), and two words that end up as the same tuple
of symbols have their counts added.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.tokenisation._cases import corpora, merge, keyed_letters
from course_utils.tokenisation.bpe import EOW, WORKED_CORPUS, count_pairs, merge_pair, split_corpus


def merge_cases(seed: int) -> list[Case]:
    """Four fixed corpora (overlaps, words becoming equal, no end marker), then two random ones with their top pair."""
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
        Case(
            "words with no end marker, ('a','b','a') x2 and ('b','a') x1, merge ('a', 'b'): the last 'a' has no right",
            ({("a", "b", "a"): 2, ("b", "a"): 1}, ("a", "b")),
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


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("first occurrence only", "only the first occurrence in each word was merged: keep scanning after a merge")
def merge_first_only(words, pair):
    out = Counter()
    for s, c in words.items():
        out[merge(s, pair, first_only=True)] += c
    return dict(out)


@bank.mistake("right to left", "overlapping matches (a a a) must be merged left to right: ('aa', 'a'), not ('a', 'aa')")
def merge_right_to_left(words, pair):
    out = Counter()
    for s, c in words.items():
        out[
            tuple(p[::-1] for p in merge(tuple(x[::-1] for x in s[::-1]), tuple(x[::-1] for x in pair[::-1]))[::-1])
        ] += c
    return dict(out)


@bank.mistake(
    "overwrites counts", "two words that become the same symbols must have their counts added, not overwritten"
)
def merge_overwrites(words, pair):
    return {merge(s, pair): c for s, c in words.items()}


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("regex on space-joined symbols (Sennrich et al.)")
def merge_with_regex(words, pair):
    """Sennrich et al.'s way: join the symbols with spaces and replace the bigram between word boundaries."""
    bigram = re.compile(r"(?<!\S)" + re.escape(" ".join(pair)) + r"(?!\S)")
    out = Counter()
    for symbols, n in words.items():
        out[tuple(bigram.sub("".join(pair), " ".join(symbols)).split(" "))] += n
    return dict(out)


@bank.alternative("a stack of output symbols")
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


@bank.alternative("recursion")
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


MERGE_PAIR = Exercise(
    name="bpe_merge_pair",
    reference=merge_pair,
    cases=keyed_letters(merge_cases),
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Build each word again from left to right: wherever the two symbols of the pair stand side "
        "by side, emit their concatenation and skip both; otherwise copy one symbol.",
        "After a join, carry on scanning after the second symbol (a a a gives aa a), and add the "
        "count into the result, because two different words can end up as the same tuple.",
    ],
    tolerance="exact",
)
EXERCISES = {MERGE_PAIR.name: MERGE_PAIR}


def check_bpe_merge_pair(fn):
    """Check ``merge_pair(words, pair)``."""
    return MERGE_PAIR.check(fn)
