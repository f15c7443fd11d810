"""Unigram language-model tokenisation (Kudo, 2018; used by T5 through SentencePiece).

Every piece has a probability; a split's probability is the product of its pieces'. Encoding
picks the most probable split with a Viterbi search over split points (log-probabilities, so long
products do not underflow). Training starts from a large candidate vocabulary and repeatedly
removes the pieces whose removal lowers the corpus log-likelihood least; single characters stay.

Covers: split probability, brute-force splits (for small words), Viterbi, and a small training
loop: hard (Viterbi) EM to fit the probabilities, then pruning by measured loss. Without smoothing,
a piece no word uses gets probability 0 and costs nothing to remove, so such pieces go first, and
removing a used piece lowers the likelihood a little. Leaves out: soft EM (SentencePiece's
forward-backward), subword sampling, SentencePiece's ``▁``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass


def split_probability(pieces: list[str], probs: dict[str, float]) -> float:
    """Product of piece probabilities: ``["low", "est"]`` with 0.04 and 0.03 -> 0.0012."""
    return math.prod(probs[p] for p in pieces)


def all_splits(word: str, vocab) -> list[list[str]]:
    """Every way to cut ``word`` into vocabulary pieces:
    ``all_splits("ab", {"a","b","ab"})`` -> ``[['a','b'], ['ab']]``."""
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
    A piece of probability 0 is never used.
    """
    return best_split(word, {p: math.log(q) if q > 0 else -math.inf for p, q in probs.items()})


def best_split(word: str, log_probs: dict[str, float]) -> list[str]:
    """Viterbi on log-probabilities: ``best_split("ab", {"a": -1, "b": -1, "ab": -3})`` -> ``['a', 'b']``."""
    n = len(word)
    best = [0.0] + [-math.inf] * n
    start = [0] * (n + 1)
    for end in range(1, n + 1):
        for begin in range(end):
            score = log_probs.get(word[begin:end], -math.inf)
            if score > -math.inf and best[begin] > -math.inf and best[begin] + score > best[end]:
                best[end], start[end] = best[begin] + score, begin
    if best[n] == -math.inf:
        raise ValueError(f"word {word!r} cannot be split into pieces of the vocabulary")
    pieces, end = [], n
    while end > 0:
        pieces.append(word[start[end] : end])
        end = start[end]
    return pieces[::-1]


def candidate_pieces(word_counts: dict[str, int], max_len: int = 5) -> dict[str, float]:
    """Every substring up to ``max_len`` characters, probability proportional to its weighted count."""
    counts: Counter = Counter()
    for word, c in word_counts.items():
        for i in range(len(word)):
            for j in range(i + 1, min(len(word), i + max_len) + 1):
                counts[word[i:j]] += c
    total = sum(counts.values())
    return {p: n / total for p, n in sorted(counts.items())}


# -- training: hard EM and pruning ---------------------------------------------------------------
MAX_WORD_LENGTH = 12  # fit tries every split of a word: 2**(n-1) of them
UNUSED_LOG_PROB = -1e9  # a piece no word uses: chosen only where nothing used can split the word


@dataclass(frozen=True)
class PruneRound:
    """One row of ``prune``'s history: vocabulary size after the round, the corpus log-likelihood,
    the pieces removed in the round and which of them no word used (removing those costs nothing)."""

    size: int
    log_likelihood: float
    removed: tuple[str, ...] = ()
    unused: tuple[str, ...] = ()


def segment(word_counts: dict[str, int], probs: dict[str, float]) -> dict[str, list[str]]:
    """Best split of every word; pieces of probability 0 only where nothing else fits:
    ``segment({"low": 5}, {"low": 1.0, "l": 0, "o": 0, "w": 0})`` -> ``{'low': ['low']}``."""
    log_probs = {p: math.log(q) if q > 0 else UNUSED_LOG_PROB for p, q in probs.items()}
    return {w: best_split(w, log_probs) for w in word_counts}


def usage(word_counts: dict[str, int], splits: dict[str, list[str]]) -> Counter:
    """How often each piece is used, weighted by word counts: ``{"low": 5}``, ``{"low": ["lo", "w"]}`` -> lo 5, w 5."""
    used: Counter = Counter()
    for word, pieces in splits.items():
        for p in pieces:
            used[p] += word_counts[word]
    return used


def segmentation_log_likelihood(word_counts: dict[str, int], splits: dict[str, list[str]]) -> float:
    """Corpus log-likelihood of a segmentation with its own best probabilities (use / total uses):
    ``sum_p n_p log(n_p / N)``; ``{"aa": 2}`` split ``["a", "a"]`` -> 4 log 1 = 0.0."""
    used = usage(word_counts, splits)
    total = sum(used.values())
    return sum(n * math.log(n / total) for n in used.values())


def _improve(word_counts: dict[str, int], splits: dict[str, list[str]], vocab) -> dict[str, list[str]]:
    """Coordinate ascent on the segmentation: each word in turn takes the split (of all splits into
    ``vocab`` pieces) that gives the corpus the highest likelihood, the other words' splits fixed;
    repeat until no word changes. Unlike a Viterbi step, a piece nobody uses yet can be picked up."""
    splits = dict(splits)
    changed = True
    while changed:
        changed = False
        for word in sorted(word_counts):

            def score(pieces, word=word):
                return segmentation_log_likelihood(word_counts, {**splits, word: pieces})

            best = max(all_splits(word, vocab), key=score)
            if score(best) > score(splits[word]) + 1e-9:
                splits[word], changed = best, True
    return splits


def fit(word_counts: dict[str, int], probs: dict[str, float]):
    """The probabilities of a fixed vocabulary that make the corpus most likely (hard, Viterbi-style
    EM): start from the best splits under ``probs``, improve them word by word (``_improve``), and
    give each piece its share of all uses, 0 for a piece no word uses. Returns (probs, splits).
    Tries every split of each word, so it is meant for short words (the course's toy corpora)."""
    if any(len(w) > MAX_WORD_LENGTH for w in word_counts):
        raise ValueError(
            f"word_counts: words longer than {MAX_WORD_LENGTH} characters are too long for this toy trainer"
        )
    splits = _improve(word_counts, segment(word_counts, probs), probs)
    used = usage(word_counts, splits)
    return {p: used[p] / sum(used.values()) for p in probs}, splits


def removal_loss(
    word_counts: dict[str, int], probs: dict[str, float], splits: dict[str, list[str]], piece: str
) -> float:
    """How much the corpus log-likelihood drops if ``piece`` is removed and the words are split again
    (``fit`` on the smaller vocabulary); exactly 0.0 for a piece no word uses."""
    if not any(piece in pieces for pieces in splits.values()):
        return 0.0
    _, resplit = fit(word_counts, {p: q for p, q in probs.items() if p != piece})
    return segmentation_log_likelihood(word_counts, splits) - segmentation_log_likelihood(word_counts, resplit)


def prune(word_counts: dict[str, int], probs: dict[str, float], target_size: int, drop: float = 0.25):
    """Shrink ``probs`` to ``target_size`` pieces; returns (final probs, [PruneRound, ...]).

    Each round fits the probabilities (``fit``), measures every multi-character piece's
    ``removal_loss`` and removes the ``drop`` fraction (at least one) that costs least, ties by
    piece; unused pieces cost nothing, so they go first. Single characters always stay. As long as
    ``fit`` finds the best splits, the likelihood can only fall: a smaller vocabulary has fewer
    ways to split each word.
    """
    if not isinstance(target_size, int) or target_size < len({ch for w in word_counts for ch in w}):
        raise ValueError(f"target_size must be an int at least the number of distinct characters, got {target_size}")
    if not 0 <= drop < 1:
        raise ValueError(f"drop must be a fraction in [0, 1) (0: one piece per round), got {drop}")
    probs, splits = fit(word_counts, dict(probs))
    history = [PruneRound(len(probs), segmentation_log_likelihood(word_counts, splits))]
    while len(probs) > target_size:
        loss = {p: removal_loss(word_counts, probs, splits, p) for p in probs if len(p) > 1}
        if not loss:
            break
        n_drop = max(1, min(int(len(probs) * drop), len(probs) - target_size))
        removed = tuple(sorted(loss, key=lambda p: (loss[p], p))[:n_drop])
        used = usage(word_counts, splits)
        probs, splits = fit(word_counts, {p: q for p, q in probs.items() if p not in removed})
        history.append(
            PruneRound(
                len(probs),
                segmentation_log_likelihood(word_counts, splits),
                removed,
                tuple(p for p in removed if not used[p]),
            )
        )
    return probs, history
