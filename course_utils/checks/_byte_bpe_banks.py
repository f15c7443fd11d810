"""Inputs, wrong answers and accepted alternatives for the two byte-level BPE exercises of notebook 01.

``learn_byte_merges(text, n_merges)``: the training loop on UTF-8 bytes of GPT-2-style chunks; the
reference is the course trainer (``tokenisation/trainer.py``). Tie-break rule, stated in the
notebook: among pairs with the same count, merge the smallest pair of ids ``(left, right)``; the
k-th merge (from 0) creates id ``256 + k``.

``encode_chunk(piece, ranks)``: merge-by-rank encoding of one chunk with GPT-2's ranks; a check
case is a whole text, cut into chunks by GPT-2's pattern and encoded chunk by chunk, so the ids can
be compared with tiktoken's (``tests/test_tokenisation_oracle.py`` proves the reference equals
tiktoken on every case of seeds 0-2).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Mapping

from course_utils.checks.core import Case
from course_utils.corpus import corpus_slice, load_corpus
from course_utils.tokenisation import real
from course_utils.tokenisation.bpe import _join_pair
from course_utils.tokenisation.pretokenise import GPT2_PATTERN, compiled, pretokenise
from course_utils.tokenisation.trainer import chunk_counts, learn_merges

SLICE_BYTES, SLICE_MERGES = 12_000, 120


# -- the training loop ---------------------------------------------------------------------------
def learn_byte_merges(text: str, n_merges: int) -> list[tuple[int, int]]:
    """Reference: the course trainer's merges, as ``[(left id, right id), ...]`` (ids 256, 257, ...)."""
    merges = learn_merges(chunk_counts(text), n_merges)
    if any(new != 256 + k for k, (_, new) in enumerate(merges)):
        raise ValueError("a merge re-created an existing token; pick another slice for the check")
    return [pair for pair, _ in merges]


def corpus_case_text(seed: int) -> str:
    """A ~12 kB slice of the corpus that starts on a line boundary, at a seed-dependent place."""
    corpus = load_corpus()
    start = corpus.index("\n", (seed * 1_234_567) % (len(corpus) - 100_000)) + 1
    return corpus_slice(corpus[start:], SLICE_BYTES)


def train_cases(seed: int) -> list[Case]:
    worked = " ".join(w for w, n in {"low": 5, "lower": 2, "newest": 6, "widest": 3}.items() for _ in range(n))
    return [
        Case("'aaabdaaabac', 3 merges", ("aaabdaaabac", 3)),
        Case("the worked corpus as text (low x5, lower x2, newest x6, widest x3), 10 merges", (worked, 10)),
        Case("'café naïve café 😀😀 naïve', 8 merges", ("café naïve café 😀😀 naïve", 8)),
        Case(
            f"{SLICE_BYTES:,} bytes of the corpus (seed {seed}), {SLICE_MERGES} merges",
            (corpus_case_text(seed), SLICE_MERGES),
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


def train_no_pretokenisation(text, n_merges):
    return _train({tuple(text.encode("utf-8")): 1}, n_merges)


def train_unweighted(text, n_merges):
    return _train({seq: 1 for seq in _byte_sequences(text)}, n_merges)


def train_first_seen_tie(text, n_merges):
    return _train(_byte_sequences(text), n_merges, pick=lambda counts: max(counts, key=counts.get))


def train_first_occurrence_only(text, n_merges):
    return _train(_byte_sequences(text), n_merges, first_only=True)


def train_on_code_points(text, n_merges):
    return _train({tuple(ord(ch) for ch in chunk): n for chunk, n in chunk_counts(text).items()}, n_merges)


# accepted alternatives
def train_every_occurrence(text, n_merges):
    """Keeps every chunk occurrence (no deduplication), each with weight 1."""
    return _train(dict(Counter(tuple(c.encode("utf-8")) for c in pretokenise(text, GPT2_PATTERN))), n_merges)


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


# -- the encoder ---------------------------------------------------------------------------------
ENCODE_TEXTS = [
    " Shakespeare",
    "tokenisation",
    " strawberry",
    " antidisestablishmentarianism",
    "Now is the winter of our discontent",
    "café 😀 日本語",
    "  spaces\tand\n\nnewlines  ",
    "don't 1234567 !!!",
]


class ReadOnlyRanks(Mapping):
    """GPT-2's ``{token bytes: rank}`` as a read-only mapping that copies for free (the check hands
    every call a copy of its inputs; copying 50,257 entries each time would be slow)."""

    def __init__(self, ranks: dict[bytes, int]):
        self._ranks = ranks

    def __getitem__(self, key):
        return self._ranks[key]

    def __contains__(self, key):
        return key in self._ranks

    def get(self, key, default=None):
        return self._ranks.get(key, default)

    def __iter__(self):
        return iter(self._ranks)

    def __len__(self):
        return len(self._ranks)

    def __eq__(self, other):
        return self is other or (isinstance(other, ReadOnlyRanks) and self._ranks is other._ranks)

    __hash__ = object.__hash__

    def __deepcopy__(self, memo):
        return self  # read-only: nothing to protect

    def __repr__(self):
        return f"<GPT-2's ranks: {len(self)} tokens>"


def encode_with(impl, case: Case) -> list[int]:
    """Run ``impl(piece, ranks)`` on every GPT-2 chunk of the case's text; the ids of the whole text."""
    text, ranks = case.args
    return [int(i) for chunk in compiled(GPT2_PATTERN).findall(text) for i in impl(chunk.encode("utf-8"), ranks)]


def encode_cases(seed: int) -> list[Case]:
    ranks = ReadOnlyRanks(real.ranks("gpt2"))
    rng = random.Random(seed)
    lines = [line for line in corpus_case_text(seed).splitlines() if len(line) > 20]
    texts = ENCODE_TEXTS + rng.sample(lines, 3)
    return [Case(f"{text!r} with GPT-2's ranks", (text, ranks)) for text in texts]


def _merged_parts(piece, ranks, choose):
    """Join pairs of ``piece`` while any pair is a token; ``choose(options)`` picks among
    ``[(rank, position), ...]`` the one to join."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        options = [
            (ranks[parts[i] + parts[i + 1]], i) for i in range(len(parts) - 1) if parts[i] + parts[i + 1] in ranks
        ]
        if not options:
            break
        _, i = choose(options)
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts


def encode_leftmost_known_pair(piece, ranks):
    return [ranks[p] for p in _merged_parts(piece, ranks, lambda options: min(options, key=lambda o: o[1]))]


def encode_highest_rank_first(piece, ranks):
    return [ranks[p] for p in _merged_parts(piece, ranks, max)]


def encode_byte_values(piece, ranks):
    """Right merges, but a byte left on its own keeps its byte value instead of its rank."""
    return [p[0] if len(p) == 1 else ranks[p] for p in _merged_parts(piece, ranks, min)]


def encode_greedy_longest(piece, ranks):
    out, i = [], 0
    while i < len(piece):
        j = max(j for j in range(i + 1, len(piece) + 1) if piece[i:j] in ranks)
        out.append(ranks[piece[i:j]])
        i = j
    return out


# accepted alternatives
def encode_merge_all_occurrences(piece, ranks):
    """Finds the lowest-rank pair, then joins every occurrence of it in one left-to-right pass
    (the classic BPE join, which works on bytes as well as on strings)."""
    parts = [bytes([b]) for b in piece]
    while True:
        ranked = [(ranks[a + b], (a, b)) for a, b in zip(parts, parts[1:]) if a + b in ranks]
        if not ranked:
            break
        _, (a, b) = min(ranked)
        parts = _join_pair(parts, (a, b))
    return [ranks[p] for p in parts]


def encode_recursive(piece, ranks):
    """One merge, then recurse on the shorter list of parts."""

    def go(parts):
        candidates = [i for i in range(len(parts) - 1) if parts[i] + parts[i + 1] in ranks]
        if not candidates:
            return parts
        i = min(candidates, key=lambda i: ranks[parts[i] + parts[i + 1]])
        return go(parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2 :])

    return [ranks[p] for p in go([piece[i : i + 1] for i in range(len(piece))])]


def encode_on_ids(piece, ranks):
    """Keeps ids (not bytes) and a decoder from id to bytes; infinity stands for 'not a token'."""
    decoder = {i: tok for tok, i in ranks.items()}
    ids = [ranks[bytes([b])] for b in piece]
    while len(ids) > 1:
        scores = [ranks.get(decoder[a] + decoder[b], float("inf")) for a, b in zip(ids, ids[1:])]
        best = min(range(len(scores)), key=scores.__getitem__)
        if scores[best] == float("inf"):
            break
        ids[best : best + 2] = [scores[best]]
    return ids
