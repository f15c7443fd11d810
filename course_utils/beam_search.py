"""Beam search: keep the ``beam_width`` likeliest partial sequences at every step, not just one.

A sequence's score is the sum of the log-probabilities of its new tokens (the log of its
probability given the prompt). Greedy decoding is beam search with a width of 1; a width of
``d_vocab ** max_new_tokens`` keeps every sequence and so finds the likeliest one, which
``exhaustive_search`` finds by listing them all (only possible on a tiny vocabulary; tested against it).
With ``eos_id``, a beam that has produced it is finished: it is carried over unchanged and keeps
competing with its score. **Tie rule**: candidates are ranked by a stable sort on their scores, so
of two equal scores the candidate met first wins (the better-ranked beam, then the lower token id).
Leaves out length normalisation, batching and a KV cache.
"""

from __future__ import annotations

import itertools
from typing import Callable, Sequence

import torch
from torch import Tensor

from course_utils.validate import non_negative_int, positive_int


def _log_probs(next_token_logits: Callable[[Tensor], Tensor], ids: list[int]) -> list[float]:
    logits = next_token_logits(torch.tensor(ids))
    if not isinstance(logits, Tensor) or logits.ndim not in (1, 2):
        raise ValueError(
            "next_token_logits must return (d_vocab,) or (pos, d_vocab) logits, got "
            f"{getattr(logits, 'shape', type(logits).__name__)}"
        )
    last = logits[-1] if logits.ndim == 2 else logits
    return last.double().log_softmax(dim=-1).tolist()


def _checked_prompt(prompt: Sequence[int] | Tensor) -> list[int]:
    ids = [int(t) for t in (prompt.tolist() if isinstance(prompt, Tensor) else prompt)]
    if not ids:
        raise ValueError("prompt must hold at least one token id")
    return ids


def _finished(ids: list[int], n_prompt: int, eos_id: int | None) -> bool:
    return eos_id is not None and len(ids) > n_prompt and ids[-1] == eos_id


def beam_search(
    next_token_logits: Callable[[Tensor], Tensor],
    prompt: Sequence[int] | Tensor,
    max_new_tokens: int,
    beam_width: int,
    eos_id: int | None = None,
) -> tuple[list[int], float]:
    """The best beam and its score (summed log-probabilities of the new tokens, natural log).

    ``next_token_logits(ids)`` gets a 1-d long tensor and returns the logits for the next token,
    ``(d_vocab,)`` or ``(pos, d_vocab)`` (last row used). With ``beam_width=1`` this is greedy decoding.
    """
    ids = _checked_prompt(prompt)
    non_negative_int("max_new_tokens", max_new_tokens)
    positive_int("beam_width", beam_width)
    beams = [(ids, 0.0)]
    for _ in range(max_new_tokens):
        candidates = []
        for seq, score in beams:
            if _finished(seq, len(ids), eos_id):
                candidates.append((seq, score))
                continue
            candidates += [(seq + [t], score + lp) for t, lp in enumerate(_log_probs(next_token_logits, seq))]
        beams = sorted(candidates, key=lambda c: c[1], reverse=True)[:beam_width]  # stable: ties keep order
    return beams[0]


def exhaustive_search(
    next_token_logits: Callable[[Tensor], Tensor],
    prompt: Sequence[int] | Tensor,
    max_new_tokens: int,
    d_vocab: int,
    eos_id: int | None = None,
) -> tuple[list[int], float]:
    """The likeliest continuation among all ``d_vocab ** max_new_tokens`` (a sequence stops at ``eos_id``)."""
    ids = _checked_prompt(prompt)
    non_negative_int("max_new_tokens", max_new_tokens)
    positive_int("d_vocab", d_vocab)
    if d_vocab**max_new_tokens > 100_000:
        raise ValueError(f"d_vocab ** max_new_tokens = {d_vocab ** max_new_tokens} sequences is too many to list")
    best: dict[tuple[int, ...], float] = {}
    for new in itertools.product(range(d_vocab), repeat=max_new_tokens):
        seq, score = list(ids), 0.0
        for token in new:
            if _finished(seq, len(ids), eos_id):
                break
            score += _log_probs(next_token_logits, seq)[token]
            seq.append(token)
        best.setdefault(tuple(seq), score)
    top = max(best.items(), key=lambda item: item[1])
    return list(top[0]), top[1]
