"""Inputs and one helper shared by several notebook-01 exercises.

- ``corpora(seed)``: the worked corpus (low x5, lower x2, newest x6, widest x3), a corpus of repeated
  pairs, and two seeded random corpora over a small alphabet (word -> count);
- ``random_counts``: one such random corpus;
- ``merge``: the classic left-to-right join of one pair in a tuple of symbols, which the mistakes of
  ``bpe_merge_pair`` and ``bpe_encode_word`` build on (``first_only`` makes the mistake);
- ``corpus_case_text(seed)``: a ~12 kB slice of the course corpus for the byte-level exercises.
"""

from __future__ import annotations

import random

from course_utils.corpus import corpus_slice, load_corpus
from course_utils.tokenisation.bpe import WORKED_CORPUS

SLICE_BYTES = 12_000


def random_counts(rng: random.Random, n_words: int = 6, alphabet: str = "abcd") -> dict[str, int]:
    """``n_words`` distinct random words of 2-7 letters, each with a count from 1 to 9."""
    words = {}
    while len(words) < n_words:
        words["".join(rng.choice(alphabet) for _ in range(rng.randint(2, 7)))] = rng.randint(1, 9)
    return words


def corpora(seed: int) -> list[tuple[str, dict[str, int]]]:
    """Four labelled corpora: the worked one, repeated pairs, and two seeded random ones (the last two)."""
    rng = random.Random(seed)
    return [
        ("the worked corpus", dict(WORKED_CORPUS)),
        ("repeated pairs: aaaa x3, abab x2, ba x4", {"aaaa": 3, "abab": 2, "ba": 4}),
        (f"a random corpus (seed {seed})", random_counts(rng)),
        (f"another random corpus (seed {seed})", random_counts(rng, 8, "abc")),
    ]


def merge(symbols, pair, first_only=False):
    """``merge(('a','a','a'), ('a','a'))`` -> ``('aa', 'a')``; with ``first_only`` it stops after one join."""
    out, i, done = [], 0, False
    while i < len(symbols):
        if not done and i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == tuple(pair):
            out.append(symbols[i] + symbols[i + 1])
            i += 2
            done = first_only
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def corpus_case_text(seed: int) -> str:
    """A ~12 kB slice of the corpus that starts on a line boundary, at a seed-dependent place."""
    corpus = load_corpus()
    start = corpus.index("\n", (seed * 1_234_567) % (len(corpus) - 100_000)) + 1
    return corpus_slice(corpus[start:], SLICE_BYTES)
