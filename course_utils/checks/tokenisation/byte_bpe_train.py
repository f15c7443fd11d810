"""Exercise ``learn_byte_merges(text, n_merges)``: the BPE training loop on the UTF-8 bytes of GPT-2 chunks.

The reference is the course trainer (``tokenisation/trainer.py``). Required form (stated in the
notebook): the answer is ``[(left id, right id), ...]``; among pairs with the same count the smallest
pair of ids ``(left, right)`` is merged, and the k-th merge (from 0) creates id ``256 + k``.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.tokenisation._cases import SLICE_BYTES, corpus_case_text, keyed_letters
from course_utils.tokenisation.pretokenise import GPT2_PATTERN, pretokenise
from course_utils.tokenisation.trainer import chunk_counts, learn_merges

BYTE_TIE_BREAK = "among pairs with the same count, merge the smallest pair of ids (min over (-count, (left, right)))"
SLICE_MERGES = 120


def learn_byte_merges(text: str, n_merges: int) -> list[tuple[int, int]]:
    """Reference: the course trainer's merges, as ``[(left id, right id), ...]`` (ids 256, 257, ...)."""
    merges = learn_merges(chunk_counts(text), n_merges)
    if any(new != 256 + k for k, (_, new) in enumerate(merges)):
        raise ValueError("a merge re-created an existing token; pick another slice for the check")
    return [pair for pair, _ in merges]


def train_cases(seed: int) -> list[Case]:
    """Four small texts (repeats, the worked corpus, accents and emoji, too few pairs), then a seeded corpus slice."""
    worked = " ".join(w for w, n in {"low": 5, "lower": 2, "newest": 6, "widest": 3}.items() for _ in range(n))
    return [
        Case("'aaabdaaabac', 3 merges", ("aaabdaaabac", 3)),
        Case("the worked corpus as text (low x5, lower x2, newest x6, widest x3), 10 merges", (worked, 10)),
        Case("'café naïve café 😀😀 naïve', 8 merges", ("café naïve café 😀😀 naïve", 8)),
        Case("'abab', 5 merges (no pair is left after 2: stop early)", ("abab", 5)),
        Case(
            f"{SLICE_BYTES:,} bytes of the corpus (seed {seed}), {SLICE_MERGES} merges",
            # hidden cases: the slice's place drawn from random.Random(seed), which the grader keys by its secret
            (corpus_case_text(random.Random(seed).randrange(10**9) if seed else 0), SLICE_MERGES),
        ),
    ]


def _train(sequences: dict[tuple[int, ...], int], n_merges: int, pick=None, first_only=False):
    """A plain training loop on id sequences with counts; ``pick`` chooses the pair to merge."""
    pick = pick or (lambda counts: min(counts, key=lambda p: (-counts[p], p)))
    words = dict(sequences)
    merges = []
    for k in range(n_merges):
        counts: dict = defaultdict(int)
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                counts[pair] += n
        if not counts:
            break
        pair, new = pick(counts), 256 + k
        merges.append(pair)
        out: dict = defaultdict(int)
        for word, n in words.items():
            merged, i, done = [], 0, False
            while i < len(word):
                if not done and i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                    merged.append(new)
                    i += 2
                    done = first_only
                else:
                    merged.append(word[i])
                    i += 1
            out[tuple(merged)] += n
        words = out
    return merges


def _byte_sequences(text: str) -> dict[tuple[int, ...], int]:
    return {tuple(chunk.encode("utf-8")): n for chunk, n in chunk_counts(text).items()}


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "no pre-tokenisation",
    "cut the text into GPT-2 chunks first (chunk_counts): merges never cross a chunk boundary",
)
def train_no_pretokenisation(text, n_merges):
    return _train({tuple(text.encode("utf-8")): 1}, n_merges)


@bank.mistake("unweighted", "weight each distinct chunk by how often it occurs (chunk_counts gives the counts)")
def train_unweighted(text, n_merges):
    return _train({seq: 1 for seq in _byte_sequences(text)}, n_merges)


@bank.mistake("tie-break", f"tie-break rule: {BYTE_TIE_BREAK}, not the first pair seen")
def train_first_seen_tie(text, n_merges):
    return _train(_byte_sequences(text), n_merges, pick=lambda counts: max(counts, key=counts.get))


@bank.mistake(
    "first occurrence only",
    "each merge must replace every occurrence of the pair in every chunk, not only the first",
)
def train_first_occurrence_only(text, n_merges):
    return _train(_byte_sequences(text), n_merges, first_only=True)


@bank.mistake(
    "characters, not bytes",
    "start from the UTF-8 bytes of each chunk (chunk.encode('utf-8')), not from its characters' code points",
)
def train_on_code_points(text, n_merges):
    return _train({tuple(ord(ch) for ch in chunk): n for chunk, n in chunk_counts(text).items()}, n_merges)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("every chunk occurrence, weight 1")
def train_every_occurrence(text, n_merges):
    """Keeps every chunk occurrence (no deduplication), each with weight 1."""
    return _train(dict(Counter(tuple(c.encode("utf-8")) for c in pretokenise(text, GPT2_PATTERN))), n_merges)


@bank.alternative("bytes pieces with a bytes -> id table")
def train_on_bytes_objects(text, n_merges):
    """Works on bytes pieces and keeps a bytes -> id table for the tie-break."""
    ids = {bytes([b]): b for b in range(256)}
    words = {tuple(bytes([b]) for b in chunk.encode("utf-8")): n for chunk, n in chunk_counts(text).items()}
    merges = []
    for _ in range(n_merges):
        counts = Counter()
        for word, n in words.items():
            for a, b in zip(word, word[1:]):
                counts[(a, b)] += n
        if not counts:
            break
        a, b = min(counts, key=lambda p: (-counts[p], ids[p[0]], ids[p[1]]))
        merges.append((ids[a], ids[b]))
        ids[a + b] = 256 + len(merges) - 1
        new_words = Counter()
        for word, n in words.items():
            out = []
            for piece in word:
                if out and out[-1] == a and piece == b:
                    out[-1] = a + b
                else:
                    out.append(piece)
            new_words[tuple(out)] += n
        words = new_words
    return merges


@bank.alternative("max over (count, -left, -right)")
def train_sorted_max(text, n_merges):
    """Picks the pair with ``max`` on (count, -left, -right) and merges with a stack."""
    words = _byte_sequences(text)
    merges = []
    for k in range(n_merges):
        counts = Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                counts[pair] += n
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], -p[0], -p[1]))
        merges.append(pair)
        new_words = Counter()
        for word, n in words.items():
            out = []
            for x in word:
                if out and out[-1] == pair[0] and x == pair[1]:
                    out[-1] = 256 + k  # a new id never equals pair[0], so a a a -> (new, a)
                else:
                    out.append(x)
            new_words[tuple(out)] += n
        words = new_words
    return merges


BYTE_TRAIN = Exercise(
    name="byte_bpe_train",
    reference=learn_byte_merges,
    cases=keyed_letters(train_cases),
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "It is the classic training loop again, with three changes: the words are the text's GPT-2 "
        "chunks with their counts, the symbols are the ids of their UTF-8 bytes, and the k-th merge "
        "gets the new id 256 + k.",
        "Store each distinct chunk once as a tuple of ids with its count; each round count the "
        "weighted pairs, choose by the stated tie-break rule on id pairs, record the pair and "
        "replace it with the new id in every chunk.",
    ],
    tolerance="exact",
)
EXERCISES = {BYTE_TRAIN.name: BYTE_TRAIN}


def check_byte_bpe_train(fn):
    """Check ``learn_byte_merges(text, n_merges)``."""
    return BYTE_TRAIN.check(fn)
