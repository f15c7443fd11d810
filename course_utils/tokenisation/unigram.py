"""Unigram language-model tokenisation (Kudo, 2018; used by T5 through SentencePiece).

Every piece has a probability; a split's probability is the product of its pieces'. Encoding
picks the most probable split with a Viterbi search over split points (log-probabilities, so long
products do not underflow). Training starts from a large candidate vocabulary and repeatedly
removes the pieces whose removal lowers the corpus log-likelihood least; single characters stay.

Covers: split probability, brute-force splits (for small words), Viterbi, a small pruning loop
with one (Viterbi, smoothed) re-estimation step per round. Leaves out: full EM, subword sampling, SentencePiece's ``▁``.
"""

from __future__ import annotations

import math
from collections import Counter


def split_probability(pieces: list[str], probs: dict[str, float]) -> float:
    """Product of piece probabilities: ``["low", "est"]`` with 0.04 and 0.03 -> 0.0012."""
    return math.prod(probs[p] for p in pieces)


def all_splits(word: str, vocab) -> list[list[str]]:
    """Every way to cut ``word`` into vocabulary pieces: ``all_splits("ab", {"a","b","ab"})`` -> ``[['a','b'], ['ab']]``."""
    if not word:
        return [[]]
    out = []
    for end in range(1, len(word) + 1):
        if word[:end] in vocab:
            out += [[word[:end], *rest] for rest in all_splits(word[end:], vocab)]
    return out


def viterbi_segment(word: str, probs: dict[str, float]) -> list[str]:
    """The most probable split: ``"lowest"`` with low .04, est .03, lo .01, west .005 -> ``['low', 'est']``.

    ``best[i]`` is the best log-probability of ``word[:i]``; each end position tries every piece
    ending there and keeps the best, then the split is read back from the stored start points.
    """
    n = len(word)
    best = [0.0] + [-math.inf] * n
    start = [0] * (n + 1)
    for end in range(1, n + 1):
        for begin in range(end):
            piece = word[begin:end]
            if piece in probs and best[begin] > -math.inf:
                score = best[begin] + math.log(probs[piece])
                if score > best[end]:
                    best[end], start[end] = score, begin
    if best[n] == -math.inf:
        raise ValueError(f"word {word!r} cannot be split into pieces of the vocabulary")
    pieces, end = [], n
    while end > 0:
        pieces.append(word[start[end]:end])
        end = start[end]
    return pieces[::-1]


def corpus_log_likelihood(word_counts: dict[str, int], probs: dict[str, float]) -> float:
    """Sum over words of count x log P(best split)."""
    return sum(c * math.log(split_probability(viterbi_segment(w, probs), probs)) for w, c in word_counts.items())


def candidate_pieces(word_counts: dict[str, int], max_len: int = 5) -> dict[str, float]:
    """Every substring up to ``max_len`` characters, probability proportional to its weighted count."""
    counts: Counter = Counter()
    for word, c in word_counts.items():
        for i in range(len(word)):
            for j in range(i + 1, min(len(word), i + max_len) + 1):
                counts[word[i:j]] += c
    total = sum(counts.values())
    return {p: n / total for p, n in sorted(counts.items())}


def reestimate(word_counts: dict[str, int], probs: dict[str, float], smoothing: float = 0.5) -> dict[str, float]:
    """New probabilities from how often each piece is used in the best splits, plus ``smoothing``
    for every piece so that none drops to zero here (removal is ``prune``'s job)."""
    used: Counter = Counter()
    for word, c in word_counts.items():
        for p in viterbi_segment(word, probs):
            used[p] += c
    total = sum(used[p] + smoothing for p in probs)
    return {p: (used[p] + smoothing) / total for p in probs}


def prune(word_counts: dict[str, int], probs: dict[str, float], target_size: int, drop: float = 0.25):
    """Shrink ``probs`` to ``target_size`` pieces; returns (final probs, [(size, log-likelihood), ...])."""
    if target_size < len({ch for w in word_counts for ch in w}):
        raise ValueError(f"target_size must be at least the number of distinct characters, got {target_size}")
    probs = reestimate(word_counts, probs)
    history = [(len(probs), corpus_log_likelihood(word_counts, probs))]
    while len(probs) > target_size:
        base = history[-1][1]
        loss = {}
        for piece in probs:
            if len(piece) > 1:
                trial = {p: q for p, q in probs.items() if p != piece}
                loss[piece] = base - corpus_log_likelihood(word_counts, trial)
        n_drop = max(1, min(int(len(probs) * drop), len(probs) - target_size))
        for piece in sorted(loss, key=lambda p: (loss[p], p))[:n_drop]:
            del probs[piece]
        probs = reestimate(word_counts, probs)
        history.append((len(probs), corpus_log_likelihood(word_counts, probs)))
    return probs, history
