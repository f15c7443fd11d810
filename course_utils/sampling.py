"""From logits to the next token: temperature, greedy decoding, top-k and top-p filtering, sampling.

Every function works on the last dimension, so a batch of rows ``(..., d_vocab)`` works too.
``next_token_distribution`` is the whole pipeline (temperature, then top-k, then top-p) and returns
the distribution a sampler draws from, which keeps the maths deterministic and testable;
``sample_next_token`` draws from it with an explicit ``torch.Generator`` (``sample_counts`` and
``sample_shares`` tally many draws, to set beside the distribution); ``generate`` is the loop
that picks a token, appends it to the input and runs the model again. ``entropy`` and
``cross_entropy`` (the training loss on the same logits) live in ``course_utils.entropy`` and can
be imported from here too.

Temperature 0 is the greedy limit and is handled as its own branch (a one-hot distribution on the
largest logit); nothing ever divides by 0. Scores are shifted by their maximum *before* dividing by
T, so tiny temperatures (0.01, or 1e-30) cannot overflow to inf and NaN.
Leaves out beam search, repetition penalties, min-p and the KV cache.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.entropy import cross_entropy, entropy  # noqa: F401 (notebooks 04 and 09 call sampling.entropy, ...)
from course_utils.softmax import softmax
from course_utils.validate import (
    has_data,
    int_in,
    int_tensor,
    non_negative_int,
    number,
    number_in,
    positive_int,
    vocab_rows,
)


def _check_logits(logits) -> Tensor:
    return vocab_rows("logits", logits)


def _check_probs(probs) -> Tensor:
    return vocab_rows("probs", probs, probs=True)


def _check_temperature(temperature) -> float:
    t = number("temperature", temperature)
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 means greedy), got {temperature}")
    return t


def _check_top_k(top_k, d_vocab: int) -> int:
    return int_in("top_k", top_k, 1, d_vocab, high_name="d_vocab")


def _check_top_p(top_p) -> float:
    return number_in("top_p", top_p, 0, 1, low_open=True)


# The arithmetic of each step, on inputs already checked. Public functions validate once, where a
# value enters, then call these, so one redraw checks its logits once (each check is a host sync on a GPU).


def _scaled(logits: Tensor, temperature: float) -> Tensor:
    return (logits - logits.amax(dim=-1, keepdim=True)) / temperature


def _greedy_one_hot(logits: Tensor) -> Tensor:
    index = logits.argmax(dim=-1, keepdim=True)  # (..., 1)
    return torch.zeros_like(logits).scatter_(-1, index, 1.0)  # (..., d_vocab), in the logits' dtype and device


def _renormalise(probs: Tensor, keep: Tensor) -> Tensor:
    kept = probs * keep
    return kept / kept.sum(dim=-1, keepdim=True)


def _top_k_unchecked(probs: Tensor, k: int) -> Tensor:
    order = probs.argsort(dim=-1, descending=True, stable=True)  # (..., d_vocab) token ids, best first
    rank = order.argsort(dim=-1, stable=True)  # rank of each token
    return _renormalise(probs, rank < k)


def _top_p_unchecked(probs: Tensor, p: float) -> Tensor:
    if p == 1:
        return probs / probs.sum(dim=-1, keepdim=True)
    sorted_probs, order = probs.sort(dim=-1, descending=True, stable=True)  # (..., d_vocab)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass strictly ahead of each token
    keep_sorted = before < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)  # back to token order
    return _renormalise(probs, keep)


def apply_temperature(logits: Float[Tensor, "... d_vocab"], temperature: float) -> Float[Tensor, "... d_vocab"]:
    """Scaled scores ``(logits - max) / T``: ``apply_temperature(tensor([2., 0.]), 0.5)`` -> ``[0., -4.]``.

    Subtracting the row maximum first changes nothing after a softmax but keeps every value <= 0,
    so no temperature can overflow. ``temperature`` must be > 0: T = 0 has no scaled scores, use
    ``greedy`` (or ``next_token_distribution(..., temperature=0)``) for that limit.
    """
    _check_logits(logits)
    temperature = _check_temperature(temperature)
    if temperature == 0:
        raise ValueError("temperature must be > 0 in apply_temperature; T = 0 is the greedy limit: use greedy(logits)")
    return _scaled(logits, temperature)


def greedy(logits: Float[Tensor, "... d_vocab"]) -> Int[Tensor, "..."]:
    """Index of the largest logit (the first on ties): ``greedy(tensor([1., 3., 3.]))`` -> ``tensor(1)``."""
    _check_logits(logits)
    return logits.argmax(dim=-1)


def greedy_distribution(logits: Float[Tensor, "... d_vocab"]) -> Float[Tensor, "... d_vocab"]:
    """One-hot on the greedy choice: ``greedy_distribution(tensor([1., 3.]))`` -> ``[0., 1.]``."""
    _check_logits(logits)
    return _greedy_one_hot(logits)


def top_k_filter(probs: Float[Tensor, "... d_vocab"], k: int) -> Float[Tensor, "... d_vocab"]:
    """Keep the ``k`` most likely tokens and renormalise:
    ``top_k_filter(tensor([.5, .3, .2]), 2)`` -> ``[.625, .375, 0.]``.

    Exactly ``k`` tokens survive; ties are broken towards the lower index.
    """
    _check_probs(probs)
    return _top_k_unchecked(probs, _check_top_k(k, probs.shape[-1]))


def top_p_filter(probs: Float[Tensor, "... d_vocab"], p: float) -> Float[Tensor, "... d_vocab"]:
    """Nucleus filtering: keep the most likely tokens until their total reaches ``p``, renormalise.

    ``top_p_filter(tensor([.5, .3, .2]), 0.6)`` -> ``[.625, .375, 0.]`` (0.5 < 0.6, so the next one
    is kept too). A token is kept when the probability *before* it in sorted order is below ``p``,
    so the most likely token always survives; ``p = 1`` keeps everything.
    """
    _check_probs(probs)
    return _top_p_unchecked(probs, _check_top_p(p))


def next_token_distribution(
    logits: Float[Tensor, "... d_vocab"], temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Float[Tensor, "... d_vocab"]:
    """The distribution to sample from: ``next_token_distribution(tensor([6.2, 4.9, 2.1, 1.0]))`` ->
    ``[0.772, 0.211, 0.013, 0.004]``. Order: temperature, then top-k, then top-p (each renormalises).

    ``temperature=0`` takes the explicit greedy branch (one-hot on the largest logit). Every argument
    is checked here, once; the steps after it run unchecked.
    """
    _check_logits(logits)
    temperature = _check_temperature(temperature)
    if top_k is not None:
        top_k = _check_top_k(top_k, logits.shape[-1])
    if top_p is not None:
        top_p = _check_top_p(top_p)
    probs = _greedy_one_hot(logits) if temperature == 0 else softmax(_scaled(logits, temperature), dim=-1)
    if top_k is not None:
        probs = _top_k_unchecked(probs, top_k)
    if top_p is not None:
        probs = _top_p_unchecked(probs, top_p)
    return probs


def sample_next_token(
    logits: Float[Tensor, "... d_vocab"],
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Int[Tensor, "..."]:
    """Draw one token id per row: ``sample_next_token(tensor([0., 9.]), temperature=0)`` -> ``tensor(1)``.

    Pass a seeded ``torch.Generator`` (on the logits' device) for a reproducible draw.
    """
    probs = next_token_distribution(logits, temperature, top_k, top_p)
    flat = probs.reshape(-1, probs.shape[-1])  # (rows, d_vocab)
    draws = torch.multinomial(flat, 1, generator=generator)  # (rows, 1)
    return draws.reshape(probs.shape[:-1])


def sample_counts(
    probs: Float[Tensor, "d_vocab"], n_samples: int, generator: torch.Generator | None = None
) -> Int[Tensor, "d_vocab"]:
    """How often each token comes up in ``n_samples`` draws: ``sample_counts(tensor([0., 1.]), 5)`` -> ``[0, 5]``."""
    _check_probs(probs)
    if probs.ndim != 1:
        raise ValueError(f"probs must be 1-d (one distribution), got shape {tuple(probs.shape)}")
    n_samples = positive_int("n_samples", n_samples)
    draws = torch.multinomial(probs, n_samples, replacement=True, generator=generator)
    return torch.bincount(draws, minlength=probs.shape[-1])


def sample_shares(
    counts: Int[Tensor, "... d_vocab"], dtype: torch.dtype = torch.float64
) -> Float[Tensor, "... d_vocab"]:
    """Each token's share of the draws, counts over their total: ``sample_shares(tensor([1, 3]))`` -> ``[0.25, 0.75]``.

    Set beside the probabilities, it shows how close n samples come to the distribution they were drawn from.
    """
    int_tensor("counts", counts, " (as sample_counts returns)")
    if counts.ndim == 0:
        raise ValueError("counts must have a last dimension (d_vocab), got a 0-d tensor")
    total = counts.sum(dim=-1, keepdim=True)  # (..., 1)
    if has_data(counts) and bool(((counts < 0).any(dim=-1, keepdim=True) | (total <= 0)).any()):
        raise ValueError(f"counts must be >= 0 with a positive total in every row (shape {tuple(counts.shape)})")
    return counts.to(dtype) / total


def generate(
    next_token_logits: Callable[[Tensor], Tensor],
    prompt: Sequence[int] | Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_id: int | None = None,
    generator: torch.Generator | None = None,
) -> list[int]:
    """Pick a token, append it, repeat: ``max_new_tokens`` times or until ``eos_id`` comes out.

    ``next_token_logits(ids)`` gets the whole sequence so far (a 1-d long tensor) and returns the
    logits for the token after it (``(d_vocab,)``, or ``(pos, d_vocab)`` of which the last row is
    used, as a model's output is). Returns prompt + new tokens as a list of ids.
    """
    non_negative_int("max_new_tokens", max_new_tokens)
    ids = [int(t) for t in (prompt.tolist() if isinstance(prompt, Tensor) else prompt)]
    if not ids:
        raise ValueError("prompt must hold at least one token id")
    for _ in range(max_new_tokens):
        logits = next_token_logits(torch.tensor(ids))
        if not isinstance(logits, Tensor) or logits.ndim not in (1, 2):
            raise ValueError(
                "next_token_logits must return (d_vocab,) or (pos, d_vocab) logits, got "
                f"{getattr(logits, 'shape', type(logits).__name__)}"
            )
        token = int(sample_next_token(logits[-1] if logits.ndim == 2 else logits, temperature, top_k, top_p, generator))
        ids.append(token)
        if eos_id is not None and token == eos_id:
            break
    return ids
