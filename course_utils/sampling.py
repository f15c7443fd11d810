"""From logits to the next token: temperature, greedy decoding, top-k and top-p filtering, sampling.

Every function works on the last dimension, so a batch of rows ``(..., d_vocab)`` works too.
``next_token_distribution`` is the whole pipeline (temperature, then top-k, then top-p) and returns
the distribution a sampler draws from, which keeps the maths deterministic and testable;
``sample_next_token`` draws from it with an explicit ``torch.Generator``; ``generate`` is the loop
that picks a token, appends it to the input and runs the model again; ``cross_entropy`` is the
training loss on the same logits (minus the log-probability of the right next token).

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

from course_utils.softmax import softmax


def _check_logits(logits, name: str = "logits") -> None:
    if not isinstance(logits, Tensor) or not logits.is_floating_point():
        raise TypeError(f"{name} must be a floating-point torch.Tensor, got {getattr(logits, 'dtype', type(logits).__name__)}")
    if logits.ndim == 0 or logits.shape[-1] == 0:
        raise ValueError(f"{name} must have a non-empty last dimension (d_vocab), got shape {tuple(logits.shape)}")
    if torch.isnan(logits).any():
        raise ValueError(f"{name} contains NaN")
    if torch.isposinf(logits).any():
        raise ValueError(f"{name} contains +inf; use large finite values instead")
    if torch.isneginf(logits.amax(dim=-1)).any():
        raise ValueError(f"every entry of a row of {name} is -inf: there is no token left to choose")


def _check_temperature(temperature) -> float:
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 means greedy), got {temperature}")
    return float(temperature)


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
    return (logits - logits.amax(dim=-1, keepdim=True)) / temperature


def greedy(logits: Float[Tensor, "... d_vocab"]) -> Int[Tensor, "..."]:
    """Index of the largest logit (the first on ties): ``greedy(tensor([1., 3., 3.]))`` -> ``tensor(1)``."""
    _check_logits(logits)
    return logits.argmax(dim=-1)


def greedy_distribution(logits: Float[Tensor, "... d_vocab"]) -> Float[Tensor, "... d_vocab"]:
    """One-hot on the greedy choice: ``greedy_distribution(tensor([1., 3.]))`` -> ``[0., 1.]``."""
    index = greedy(logits)
    return torch.nn.functional.one_hot(index, logits.shape[-1]).to(logits.dtype)


def _renormalise(probs: Tensor, keep: Tensor) -> Tensor:
    kept = probs * keep
    return kept / kept.sum(dim=-1, keepdim=True)


def _check_probs(probs) -> None:
    _check_logits(probs, "probs")
    if (probs < 0).any():
        raise ValueError("probs must be non-negative (pass probabilities, not logits)")
    if (probs.sum(dim=-1) <= 0).any():
        raise ValueError("every row of probs must have some positive probability (a row of zeros has no distribution)")


def top_k_filter(probs: Float[Tensor, "... d_vocab"], k: int) -> Float[Tensor, "... d_vocab"]:
    """Keep the ``k`` most likely tokens and renormalise: ``top_k_filter(tensor([.5, .3, .2]), 2)`` -> ``[.625, .375, 0.]``.

    Exactly ``k`` tokens survive; ties are broken towards the lower index.
    """
    _check_probs(probs)
    d_vocab = probs.shape[-1]
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"top_k must be an int, got {type(k).__name__}")
    if not 1 <= k <= d_vocab:
        raise ValueError(f"top_k must be between 1 and d_vocab={d_vocab}, got {k}")
    order = probs.argsort(dim=-1, descending=True, stable=True)  # (..., d_vocab) token ids, best first
    rank = order.argsort(dim=-1, stable=True)  # rank of each token
    return _renormalise(probs, rank < k)


def top_p_filter(probs: Float[Tensor, "... d_vocab"], p: float) -> Float[Tensor, "... d_vocab"]:
    """Nucleus filtering: keep the most likely tokens until their total reaches ``p``, renormalise.

    ``top_p_filter(tensor([.5, .3, .2]), 0.6)`` -> ``[.625, .375, 0.]`` (0.5 < 0.6, so the next one
    is kept too). A token is kept when the probability *before* it in sorted order is below ``p``,
    so the most likely token always survives; ``p = 1`` keeps everything.
    """
    _check_probs(probs)
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"top_p must be a number, got {type(p).__name__}")
    if not 0 < p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {p}")
    if p == 1:
        return probs / probs.sum(dim=-1, keepdim=True)
    sorted_probs, order = probs.sort(dim=-1, descending=True, stable=True)  # (..., d_vocab)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass strictly ahead of each token
    keep_sorted = before < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)  # back to token order
    return _renormalise(probs, keep)


def next_token_distribution(
    logits: Float[Tensor, "... d_vocab"], temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Float[Tensor, "... d_vocab"]:
    """The distribution to sample from: ``next_token_distribution(tensor([6.2, 4.9, 2.1, 1.0]))`` ->
    ``[0.772, 0.211, 0.013, 0.004]``. Order: temperature, then top-k, then top-p (each renormalises).

    ``temperature=0`` takes the explicit greedy branch (one-hot on the largest logit).
    """
    _check_logits(logits)
    temperature = _check_temperature(temperature)
    if temperature == 0:
        probs = greedy_distribution(logits)
    else:
        probs = softmax(apply_temperature(logits, temperature), dim=-1)
    if top_k is not None:
        probs = top_k_filter(probs, top_k)
    if top_p is not None:
        probs = top_p_filter(probs, top_p)
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


def sample_counts(probs: Float[Tensor, "d_vocab"], n_samples: int, generator: torch.Generator | None = None) -> Int[Tensor, "d_vocab"]:
    """How often each token comes up in ``n_samples`` draws: ``sample_counts(tensor([0., 1.]), 5)`` -> ``[0, 5]``."""
    _check_probs(probs)
    if probs.ndim != 1:
        raise ValueError(f"probs must be 1-d (one distribution), got shape {tuple(probs.shape)}")
    n_samples = int(n_samples)
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    draws = torch.multinomial(probs, n_samples, replacement=True, generator=generator)
    return torch.bincount(draws, minlength=probs.shape[-1])


def entropy(probs: Float[Tensor, "... d_vocab"]) -> Float[Tensor, "..."]:
    """Entropy in nats, with 0·log 0 = 0: ``entropy(tensor([0.5, 0.5]))`` -> ``0.693``; one-hot -> ``0``."""
    _check_probs(probs)
    logs = torch.where(probs > 0, probs.log(), torch.zeros_like(probs))
    return -(probs * logs).sum(dim=-1) + 0.0  # + 0.0 turns -0.0 (a one-hot row) into 0.0


def cross_entropy(logits: Float[Tensor, "n d_vocab"], targets: Int[Tensor, "n"]) -> Float[Tensor, ""]:
    """Mean over rows of -ln softmax(logits)[target], computed stably (log-sum-exp with the max shifted out).

    ``cross_entropy(tensor([[6.2, 4.9, 2.1, 1.0]]), tensor([0]))`` -> ``0.259`` (= -ln 0.772).
    Same numbers as ``torch.nn.functional.cross_entropy`` (tested).
    """
    _check_logits(logits)
    if logits.ndim != 2:
        raise ValueError(f"logits must have shape (n, d_vocab), got {tuple(logits.shape)}")
    if not isinstance(targets, Tensor) or targets.dtype not in (torch.int32, torch.int64) or targets.shape != logits.shape[:1]:
        raise ValueError(f"targets must be an int tensor of shape ({logits.shape[0]},), got "
                         f"{getattr(targets, 'dtype', type(targets).__name__)} {tuple(getattr(targets, 'shape', ()))}")
    if bool(((targets < 0) | (targets >= logits.shape[-1])).any()):
        raise ValueError(f"targets must be token ids in 0..{logits.shape[-1] - 1}, got {targets.tolist()}")
    top = logits.amax(dim=-1, keepdim=True)  # (n, 1)
    log_total = top.squeeze(-1) + (logits - top).exp().sum(dim=-1).log()  # (n,): ln sum_j e^logit_j
    right = logits.gather(-1, targets[:, None].long()).squeeze(-1)  # (n,): the right token's logit
    return (log_total - right).mean()


def generate(next_token_logits: Callable[[Tensor], Tensor], prompt: Sequence[int] | Tensor, max_new_tokens: int,
             temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
             eos_id: int | None = None, generator: torch.Generator | None = None) -> list[int]:
    """Pick a token, append it, repeat: ``max_new_tokens`` times or until ``eos_id`` comes out.

    ``next_token_logits(ids)`` gets the whole sequence so far (a 1-d long tensor) and returns the
    logits for the token after it (``(d_vocab,)``, or ``(pos, d_vocab)`` of which the last row is
    used, as a model's output is). Returns prompt + new tokens as a list of ids.
    """
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    ids = [int(t) for t in (prompt.tolist() if isinstance(prompt, Tensor) else prompt)]
    if not ids:
        raise ValueError("prompt must hold at least one token id")
    for _ in range(max_new_tokens):
        logits = next_token_logits(torch.tensor(ids))
        if not isinstance(logits, Tensor) or logits.ndim not in (1, 2):
            raise ValueError(f"next_token_logits must return (d_vocab,) or (pos, d_vocab) logits, got {getattr(logits, 'shape', type(logits).__name__)}")
        token = int(sample_next_token(logits[-1] if logits.ndim == 2 else logits, temperature, top_k, top_p, generator))
        ids.append(token)
        if eos_id is not None and token == eos_id:
            break
    return ids
