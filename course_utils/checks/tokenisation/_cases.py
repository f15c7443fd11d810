"""Inputs and one helper shared by several notebook-01 exercises.

- ``corpora(seed)``: the worked corpus (low x5, lower x2, newest x6, widest x3), a corpus of repeated
  pairs, and two seeded random corpora over a small alphabet (word -> count);
- ``random_counts``: one such random corpus;
- ``merge``: the classic left-to-right join of one pair in a tuple of symbols, which the mistakes of
  ``bpe_merge_pair`` and ``bpe_encode_word`` build on (``first_only`` makes the mistake);
- ``corpus_case_text(seed)``: a ~12 kB slice of the course corpus for the byte-level exercises.
"""

from __future__ import annotations

import functools
import random
import string

from course_utils.corpus import corpus_slice, load_corpus
from course_utils.checks.core import Case
from course_utils.tokenisation.bpe import EOW, WORKED_CORPUS

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


def keyed_letters(cases_fn):
    """``cases_fn`` whose hidden cases (seed >= 1) have their lowercase ASCII letters renamed by a permutation
    drawn from ``random.Random`` seeded with the seed, which the grader keys by its secret: every count, overlap,
    tie and early stop keeps its shape, but the strings of a hidden case differ from key to key (issue #43
    point 5). The end marker ``</w>`` and anything that is not a string stay as they are."""

    @functools.wraps(cases_fn)
    def cases(seed: int) -> list[Case]:
        found = cases_fn(seed)
        if not seed:
            return found
        letters = list(string.ascii_lowercase)
        random.Random(1_000_003 * seed + 101).shuffle(letters)
        table = str.maketrans(string.ascii_lowercase, "".join(letters))

        def rename(value):
            if isinstance(value, str):
                return EOW.join(part.translate(table) for part in value.split(EOW))
            if isinstance(value, (tuple, list)):
                return type(value)(rename(v) for v in value)
            if isinstance(value, dict) and all(isinstance(k, (str, tuple)) for k in value):
                return {rename(k): rename(v) for k, v in value.items()}
            return value

        return [Case(f"{c.label} (letters renamed by the key)", rename(c.args), rename(c.kwargs)) for c in found]

    return cases
