"""Classic word-level BPE (Sennrich et al., 2016), the version of the worked example.

Each word is a tuple of characters plus the end-of-word marker ``</w>``, stored with its count:
``{('l', 'o', 'w', '</w>'): 5, ...}``. Training repeatedly merges the most frequent adjacent pair
(counts weighted by word frequency). Tie-break rule: among equally frequent pairs, merge the
smallest pair in Python's string order (``('e', 's') < ('s', 't')``); with it the worked corpus
gives e+s, es+t, est+</w>, l+o, lo+w. Encoding replays the merges in learned order.

Covers: pair counting, one merge, the training loop, encoding, building a vocabulary, decoding.
Leaves out: bytes, pre-tokenisation and speed (see ``byte_bpe.py`` and ``trainer.py``).
"""

from __future__ import annotations

from collections import Counter

EOW = "</w>"
WORKED_CORPUS = {"low": 5, "lower": 2, "newest": 6, "widest": 3}

Words = dict  # tuple[str, ...] -> int
Pair = tuple  # (str, str)


def split_word(word: str) -> tuple[str, ...]:
    """Characters plus the end marker: ``split_word("low")`` -> ``('l', 'o', 'w', '</w>')``."""
    if not isinstance(word, str) or not word:
        raise ValueError(f"word must be a non-empty str, got {word!r}")
    return (*word, EOW)


def split_corpus(word_counts: dict[str, int]) -> Words:
    """``{"low": 5}`` -> ``{('l', 'o', 'w', '</w>'): 5}``."""
    if not isinstance(word_counts, dict):
        raise TypeError(f"word_counts must be a dict of word -> count, got {type(word_counts).__name__}")
    if not word_counts:
        raise ValueError("word_counts is empty: BPE needs a non-empty corpus")
    return {split_word(w): c for w, c in word_counts.items()}


def count_pairs(words: Words) -> dict[Pair, int]:
    """Adjacent-pair counts, weighted by word count: ``{('a','b','a','b'): 2}`` -> ``{('a','b'): 4, ('b','a'): 2}``."""
    counts: dict[Pair, int] = Counter()
    for symbols, count in words.items():
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += count
    return dict(counts)


def merge_pair(words: Words, pair: Pair) -> Words:
    """Join every left-to-right occurrence of ``pair``: ``{('a','a','a'): 1}``, ('a','a') -> ``{('aa','a'): 1}``."""
    out: dict[tuple, int] = Counter()
    for symbols, count in words.items():
        out[tuple(join_pair(symbols, pair))] += count
    return dict(out)


def join_pair(symbols, pair: Pair) -> list[str]:
    """``join_pair(['l','o','w'], ('l','o'))`` -> ``['lo', 'w']`` (every left-to-right occurrence)."""
    a, b = pair
    merged, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            merged.append(a + b)
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


def best_pair(pair_counts: dict[Pair, float]) -> Pair:
    """Most frequent pair; ties go to the smallest pair: ``{('s','t'): 9, ('e','s'): 9}`` -> ``('e', 's')``.

    The course's one tie-break rule: the byte-level trainer (pairs of ids) and WordPiece (scores
    instead of counts) call it too.
    """
    return min(pair_counts, key=lambda p: (-pair_counts[p], p))


def train_bpe(word_counts: dict[str, int], n_merges: int) -> list[Pair]:
    """The learned merges in order: ``train_bpe(WORKED_CORPUS, 2)`` -> ``[('e', 's'), ('es', 't')]``."""
    return [pair for pair, _, _ in training_steps(word_counts, n_merges)]


def training_steps(word_counts: dict[str, int], n_merges: int) -> list[tuple[Pair, int, Words]]:
    """Each step's (merged pair, its count, the words after the merge): the training loop itself."""
    words, steps = split_corpus(word_counts), []
    for _ in range(n_merges):
        pairs = count_pairs(words)
        if not pairs:
            break
        pair = best_pair(pairs)
        words = merge_pair(words, pair)
        steps.append((pair, pairs[pair], words))
    return steps


def encode_word(word: str, merges: list[Pair]) -> list[str]:
    """Replay merges in learned order:
    ``encode_word("lowest", train_bpe(WORKED_CORPUS, 5))`` -> ``['low', 'est</w>']``."""
    symbols = list(split_word(word))
    for pair in merges:
        symbols = join_pair(symbols, pair)
    return symbols


def build_vocab(word_counts: dict[str, int], merges: list[Pair]) -> list[str]:
    """Token list (index = id): the sorted characters, ``</w>``, then each merge's result in order."""
    chars = sorted({ch for word in word_counts for ch in word})
    return chars + [EOW] + [a + b for a, b in merges]


def decode_ids(ids: list[int], vocab: list[str]) -> str:
    """Pieces glued together, ``</w>`` becoming a space: ids of ``low``, ``est</w>`` -> ``'lowest '``."""
    return "".join(vocab[i] for i in ids).replace(EOW, " ")
