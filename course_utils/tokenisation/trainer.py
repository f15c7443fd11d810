"""Training byte-level BPE: an efficient incremental trainer and a plain reference trainer.

Both start from the distinct pre-tokenised chunks of the text with their counts (a chunk that
occurs 3,000 times is stored once, weight 3,000) and repeat: find the most frequent adjacent
pair, give it a new id, replace it everywhere. Tie-break rule (shared, deterministic): among
pairs with the same count, merge the smallest ``(left id, right id)``: ``bpe.best_pair``'s rule, which
the naive trainer calls and the incremental trainer's heap of ``(-count, pair)`` orders by. If a pair's bytes already
form a token (``ab``+``c`` after ``a``+``bc``), the merge reuses that id and adds no new token.

* ``learn_merges_naive`` recounts every pair of every chunk after each merge (simple, slow).
* ``learn_merges`` keeps the pair counts and, for each pair, the set of chunks that contain it;
  a merge only revisits those chunks and updates the counts of the pairs it changed. A heap with
  lazy deletion finds the best pair. Its merges equal the naive trainer's (tests).

Special tokens (``special_tokens=["<|endoftext|>"]``) are cut out of the text before pre-tokenisation
(``specials.split_specials``): the pieces between them are pre-tokenised apart, so a chunk never
reaches across a special token and no merge is learned from one's bytes; they take no merge.

Leaves out: parallelism, and dropping rare chunks (both trainers see every chunk).
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict

from course_utils.tokenisation.bpe import best_pair
from course_utils.tokenisation.pretokenise import GPT2_PATTERN, compiled
from course_utils.tokenisation.specials import check_special_tokens, split_specials

Pair = tuple[int, int]


def chunk_counts(text: str, pattern: str = GPT2_PATTERN, special_tokens=()) -> Counter:
    """Distinct chunks of ``text`` with counts: ``"a a a"`` -> ``Counter({' a': 2, 'a': 1})``; the pieces
    between ``special_tokens`` are pre-tokenised apart: ``"a<|x|> a"`` with ``["<|x|>"]`` -> ``{'a': 1, ' a': 1}``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if not text:
        raise ValueError("text is empty: BPE needs a non-empty training corpus")
    split, counts = compiled(pattern), Counter()
    for piece, special in split_specials(text, check_special_tokens(special_tokens)):
        if not special:  # no list of every chunk: ~60 MB less on 5 MB
            counts.update(m.group() for m in split.finditer(piece))
    return counts


def _check_vocab_size(vocab_size) -> int:
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < 256:
        raise ValueError(f"vocab_size must be at least 256 (the byte alphabet), got {vocab_size}")
    return vocab_size - 256


def _merge_word(word: list[int], pair: Pair, new: int) -> list[int]:
    """Replace each left-to-right occurrence of ``pair``: ``[1, 2, 3, 1, 2]`` with (1, 2) -> 9 gives ``[9, 3, 9]``."""
    out, i, n = [], 0, len(word)
    a, b = pair
    while i < n:
        if i < n - 1 and word[i] == a and word[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def _setup(counts: Counter):
    words = [list(chunk.encode("utf-8")) for chunk in counts]
    weights = list(counts.values())
    vocab = {b: bytes([b]) for b in range(256)}
    return words, weights, vocab


def _new_id(pair: Pair, vocab: dict[int, bytes], ids: dict[bytes, int]) -> tuple[int, bool]:
    merged = vocab[pair[0]] + vocab[pair[1]]
    if merged in ids:
        return ids[merged], False
    new = len(vocab)
    vocab[new], ids[merged] = merged, new
    return new, True


def learn_merges_naive(counts: Counter, n_new: int) -> list[tuple[Pair, int]]:
    """Reference trainer: full recount per merge. Returns ``[((left, right), new_id), ...]``."""
    words, weights, vocab = _setup(counts)
    ids = {v: k for k, v in vocab.items()}
    merges, created = [], 0
    while created < n_new:
        pair_counts: dict[Pair, int] = defaultdict(int)
        for word, w in zip(words, weights):
            for pair in zip(word, word[1:]):
                pair_counts[pair] += w
        if not pair_counts:
            break
        best = best_pair(pair_counts)
        new, is_new = _new_id(best, vocab, ids)
        created += is_new
        merges.append((best, new))
        words = [_merge_word(word, best, new) for word in words]
    return merges


def learn_merges(counts: Counter, n_new: int, progress: bool = False) -> list[tuple[Pair, int]]:
    """Incremental trainer, same output as ``learn_merges_naive``: ``[((101, 115), 256), ...]``."""
    words, weights, vocab = _setup(counts)
    ids = {v: k for k, v in vocab.items()}
    pair_counts: dict[Pair, int] = defaultdict(int)
    where: dict[Pair, set[int]] = defaultdict(set)
    for wi, word in enumerate(words):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += weights[wi]
            where[pair].add(wi)
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    bar = None
    if progress:
        from course_utils.env.progress import progress_bar

        bar = progress_bar(total=n_new, desc="BPE merges", unit="merge")
    merges, created = [], 0
    while created < n_new and heap:
        neg, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -neg or neg == 0:
            continue  # a stale heap entry: the count changed after it was pushed
        new, is_new = _new_id(pair, vocab, ids)
        created += is_new
        merges.append((pair, new))
        delta: dict[Pair, int] = defaultdict(int)  # net change of each pair's count in this merge
        for wi in where.pop(pair):
            word = words[wi]
            merged = _merge_word(word, pair, new)
            if len(merged) == len(word):
                continue  # this chunk lost the pair to an earlier merge
            w = weights[wi]
            for q in zip(word, word[1:]):
                delta[q] -= w
            for q in zip(merged, merged[1:]):
                delta[q] += w
                if new in q:
                    where[q].add(wi)  # only pairs with the new id are new to this chunk
            words[wi] = merged
        for q, d in delta.items():
            if d:
                c = pair_counts[q] + d
                if c > 0:
                    pair_counts[q] = c
                    heapq.heappush(heap, (-c, q))
                else:
                    del pair_counts[q]
        if bar is not None and is_new:
            bar.update(1)
    if bar is not None:
        bar.close()
    return merges


def train_byte_bpe(
    text: str, vocab_size: int, pattern: str = GPT2_PATTERN, progress: bool = False, naive: bool = False,
    special_tokens=(),
) -> list[tuple[bytes, Pair]]:
    """Train on ``text`` up to ``vocab_size`` tokens (bytes and merges; ``special_tokens`` are only cut
    out of the text); returns the new tokens in order as ``[(token bytes, (left id, right id)), ...]``,
    e.g. ``[(b' t', (32, 116)), ...]``."""
    n_new = _check_vocab_size(vocab_size)
    counts = chunk_counts(text, pattern, special_tokens)
    merges = learn_merges_naive(counts, n_new) if naive else learn_merges(counts, n_new, progress)
    vocab = {b: bytes([b]) for b in range(256)}
    out = []
    for (a, b), new in merges:
        if new not in vocab:
            vocab[new] = vocab[a] + vocab[b]
            out.append((vocab[new], (a, b)))
    return out
