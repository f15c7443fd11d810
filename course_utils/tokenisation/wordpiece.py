"""WordPiece (BERT's tokenizer): pick merges by a score instead of a raw count, and mark
continuation pieces with ``##``.

score(a, b) = count(a b) / (count(a) x count(b)), every count weighted by word frequency. A pair
scores high when its parts are rare on their own but usually appear together. On the worked
corpus e+s scores 9/(17x9) = 0.059 while i+d scores 3/(3x3) = 0.333.

Covers: symbol counts, the score, one training loop (same tie-break as ``bpe.py``), greedy
longest-match-first encoding with ``##``. Leaves out: BERT's normalisation and [UNK] budgets.
"""

from __future__ import annotations

from collections import Counter

from course_utils.tokenisation.bpe import Pair, Words, best_pair, count_pairs, merge_pair


def count_symbols(words: Words) -> dict[str, int]:
    """Weighted symbol counts: ``{('a','b','a'): 2}`` -> ``{'a': 4, 'b': 2}``."""
    counts: dict[str, int] = Counter()
    for symbols, count in words.items():
        for s in symbols:
            counts[s] += count
    return dict(counts)


def wordpiece_score(words: Words, pair: Pair) -> float:
    """``count(ab) / (count(a) * count(b))``: on the worked corpus ('i', 'd') -> 0.333."""
    pair_count = count_pairs(words).get(tuple(pair), 0)
    symbols = count_symbols(words)
    a, b = pair
    if pair_count == 0:
        return 0.0
    return pair_count / (symbols[a] * symbols[b])


def wordpiece_scores(words: Words) -> dict[Pair, float]:
    """The score of every adjacent pair present."""
    pairs, symbols = count_pairs(words), count_symbols(words)
    return {p: c / (symbols[p[0]] * symbols[p[1]]) for p, c in pairs.items()}


def train_wordpiece(words: Words, n_merges: int) -> list[Pair]:
    """Merges chosen by score (ties: smallest pair): worked corpus -> ``[('i', 'd'), ...]``."""
    merges = []
    for _ in range(n_merges):
        scores = wordpiece_scores(words)
        if not scores:
            break
        pair = best_pair(scores)  # the highest score; ties go to the smallest pair, as in BPE
        merges.append(pair)
        words = merge_pair(words, pair)
    return merges


def wordpiece_tokenize(word: str, vocab: set[str]) -> list[str]:
    """Greedy longest match, continuation pieces prefixed ``##``:
    ``wordpiece_tokenize("playing", {"play", "##ing"})`` -> ``['play', '##ing']``; no match -> ``['[UNK]']``."""
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces
