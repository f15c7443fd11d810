"""Exercise ``train_bpe(word_counts, n_merges)``: the classic BPE training loop, the merges in order.

Required form (stated in the notebook): each round merges the most frequent pair, and among pairs with
the same count the smallest one (``min`` over ``(-count, pair)``); training stops early when no pair is
left.
"""

from __future__ import annotations

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.tokenisation._cases import corpora, keyed_letters
from course_utils.checks.tokenisation.bpe_count_pairs import pairs_by_index, pairs_with_pairwise
from course_utils.checks.tokenisation.bpe_merge_pair import merge_recursively, merge_with_regex
from course_utils.tokenisation import bpe
from course_utils.tokenisation.bpe import EOW, count_pairs, merge_pair, split_corpus, train_bpe

TIE_BREAK = "among pairs with the same count, merge the smallest pair (min over (-count, pair))"


def train_with(word_counts, n_merges, pick, weighted=True, recount=True):
    """A training loop whose pair choice is ``pick(pairs)``; ``weighted=False`` and ``recount=False`` are
    the mistakes of the same names."""
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


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("unweighted", "pairs must be counted with each word's frequency (low x5 counts 5 times)")
def train_unweighted(word_counts, n_merges):
    return train_with(word_counts, n_merges, smallest_tie, weighted=False)


@bank.mistake("no recount", "recount the pairs after every merge: merging changes which pairs exist")
def train_without_recount(word_counts, n_merges):
    return train_with(word_counts, n_merges, smallest_tie, recount=False)


@bank.mistake("tie-break", f"tie-break rule: {TIE_BREAK}, not the first one seen")
def train_first_seen_tie(word_counts, n_merges):
    return train_with(word_counts, n_merges, first_seen_tie)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("sort the pairs, take the first")
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


@bank.alternative("top count, then the smallest of the tied")
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


@bank.alternative("from scratch, no course helpers")
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


TRAIN_BPE = Exercise(
    name="bpe_train",
    reference=train_bpe,
    cases=keyed_letters(
        lambda seed: [Case(f"{label}, {n} merges", (wc, n)) for (label, wc), n in zip(corpora(seed), (5, 3, 6, 8))]
        + [Case("ab x2 and b x1, 6 merges (no pair is left after 2: stop early)", ({"ab": 2, "b": 1}, 6))]
    ),
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Each round: count the pairs of the current corpus, choose one by the tie-break rule stated "
        "above the exercise, merge it everywhere, and remember it. Stop early when no pair is left.",
        "The choice needs the highest count first and, among equal counts, the smallest pair: one "
        "key that sorts by minus the count, then by the pair itself, does both at once.",
    ],
    tolerance="exact",
)
EXERCISES = {TRAIN_BPE.name: TRAIN_BPE}


def check_bpe_train(fn):
    """Check ``train_bpe(word_counts, n_merges)``."""
    return TRAIN_BPE.check(fn)
