"""Exercise ``encode_chunk(piece, ranks)``: merge-by-rank encoding of one GPT-2 chunk with GPT-2's ranks.

``piece`` is the chunk's UTF-8 bytes and ``ranks`` maps token bytes to their rank (= id). Repeatedly
join the neighbouring pair with the lowest rank (the leftmost of equals) until no pair is a token;
the answer is the ranks of the parts. A check case is a whole text, cut into chunks by GPT-2's pattern
and encoded chunk by chunk, so the ids can be compared with tiktoken's
(``tests/test_tokenisation_oracle.py`` holds the reference equal to tiktoken on every case of seeds 0-2).
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.tokenisation._cases import corpus_case_text
from course_utils.tokenisation import real
from course_utils.tokenisation.bpe import join_pair
from course_utils.tokenisation.byte_bpe import encode_chunk_with_ranks
from course_utils.tokenisation.pretokenise import GPT2_PATTERN, compiled

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
    """The fixed texts (long words, accents, emoji, whitespace, digits), then three seeded corpus lines."""
    ranks = ReadOnlyRanks(real.ranks("gpt2"))
    rng = random.Random(seed)
    lines = [line for line in corpus_case_text(seed).splitlines() if len(line) > 20]
    texts = ENCODE_TEXTS + rng.sample(lines, 3)
    if seed:  # hidden: each fixed text after a word drawn from random.Random(seed), which the grader keys
        texts = [f"{rng.choice(_LEAD_WORDS)} {text}" for text in ENCODE_TEXTS] + texts[len(ENCODE_TEXTS):]
    return [Case(f"{text!r} with GPT-2's ranks", (text, ranks)) for text in texts]


# words put before a hidden case's fixed text, so that its input depends on the grader's key
_LEAD_WORDS = ("the", "river", "quietly", "seven", "lantern", "marble", "over", "Winter", "yes", "orchard", "Tokyo",
               "photograph", "beneath", "scarlet", "Hamlet", "whisper", "thirty", "engine", "meadow", "clockwork")


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


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "longest match",
    "byte-level BPE does not take the longest known prefix: repeat 'join the lowest-rank pair' until none is left",
)
def encode_greedy_longest(piece, ranks):
    out, i = [], 0
    while i < len(piece):
        j = max(j for j in range(i + 1, len(piece) + 1) if piece[i:j] in ranks)
        out.append(ranks[piece[i:j]])
        i = j
    return out


@bank.mistake(
    "leftmost pair",
    "join the pair with the lowest rank anywhere in the chunk, not the first pair (from the left) that is a token",
)
def encode_leftmost_known_pair(piece, ranks):
    return [ranks[p] for p in _merged_parts(piece, ranks, lambda options: min(options, key=lambda o: o[1]))]


@bank.mistake("highest rank", "a lower rank means an earlier merge: join the pair with the smallest rank first")
def encode_highest_rank_first(piece, ranks):
    return [ranks[p] for p in _merged_parts(piece, ranks, max)]


@bank.mistake(
    "byte values as ids",
    "every id is a rank, single bytes included: GPT-2's id of a lone byte is ranks[bytes([b])], not b",
)
def encode_byte_values(piece, ranks):
    """Right merges, but a byte left on its own keeps its byte value instead of its rank."""
    return [p[0] if len(p) == 1 else ranks[p] for p in _merged_parts(piece, ranks, min)]


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("join every occurrence of the best pair")
def encode_merge_all_occurrences(piece, ranks):
    """Finds the lowest-rank pair, then joins every occurrence of it in one left-to-right pass
    (the classic BPE join, which works on bytes as well as on strings)."""
    parts = [bytes([b]) for b in piece]
    while True:
        ranked = [(ranks[a + b], (a, b)) for a, b in zip(parts, parts[1:]) if a + b in ranks]
        if not ranked:
            break
        _, (a, b) = min(ranked)
        parts = join_pair(parts, (a, b))
    return [ranks[p] for p in parts]


@bank.alternative("recursion")
def encode_recursive(piece, ranks):
    """One merge, then recurse on the shorter list of parts."""

    def go(parts):
        candidates = [i for i in range(len(parts) - 1) if parts[i] + parts[i + 1] in ranks]
        if not candidates:
            return parts
        i = min(candidates, key=lambda i: ranks[parts[i] + parts[i + 1]])
        return go(parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2 :])

    return [ranks[p] for p in go([piece[i : i + 1] for i in range(len(piece))])]


@bank.alternative("ids with a decoder")
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


BYTE_ENCODE = Exercise(
    name="byte_bpe_encode",
    reference=encode_chunk_with_ranks,
    function_name="encode_chunk",
    cases=encode_cases,
    run=encode_with,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Start from the chunk's single bytes. A pair of neighbours can be joined when their "
        "concatenated bytes are a key of ranks; its rank says how early that merge was learned.",
        "Repeat: among all neighbouring pairs that are tokens, join the one with the smallest rank "
        "(the leftmost if two are equal); stop when no pair is a token, then look up every part's rank.",
    ],
    tolerance="exact",
)
EXERCISES = {BYTE_ENCODE.name: BYTE_ENCODE}


def check_byte_bpe_encode(fn):
    """Check ``encode_chunk(piece, ranks)``."""
    return BYTE_ENCODE.check(fn)
