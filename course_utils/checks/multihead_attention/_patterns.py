"""Attention patterns the two head-score exercises share: their cases (random causal patterns, hand-built
previous-token and induction heads, the trained toy model's two layers) and ``stripe_mean``, the average
along one diagonal stripe that several of their mistakes take."""

from __future__ import annotations

import functools

import torch

from course_utils.attention import induction
from course_utils.checks.core import Case
from course_utils.checks.shared import keyed_uniform
from course_utils.masking import causal_mask
from course_utils.softmax import masked_softmax

F64 = torch.float64


def _trained_model():
    """The toy model notebook 05 trains (default config, seed 0, CPU), shared with the notebook's run."""
    return induction.trained_induction_model(induction.InductionConfig(), seed=0)[0]


def _hand_built(n_ctx: int, half_len: int) -> torch.Tensor:
    """(1, 2, n, n): head 0 a perfect previous-token head, head 1 a perfect induction head (elsewhere: itself)."""
    pattern = torch.zeros(1, 2, n_ctx, n_ctx, dtype=F64)
    pattern[0, 0, 0, 0] = 1.0
    pattern[0, 0, torch.arange(1, n_ctx), torch.arange(n_ctx - 1)] = 1.0
    pattern[0, 1] = torch.eye(n_ctx, dtype=F64)
    for q in range(half_len, n_ctx):
        pattern[0, 1, q] = 0.0
        pattern[0, 1, q, q - half_len + 1] = 1.0
    return pattern


def _random_causal(seed: int, batch: int, heads: int, n_ctx: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    scores = 2 * torch.randn(batch, heads, n_ctx, n_ctx, generator=gen, dtype=F64)
    return masked_softmax(scores, causal_mask(n_ctx))  # (batch, head, q_pos, k_pos)


def _model_patterns(model, probe_seed: int) -> list[torch.Tensor]:
    probe = induction.repeated_sequences(50, 10, model.cfg.d_vocab, torch.Generator().manual_seed(probe_seed))
    device = model.W_E.device
    return [p.detach().cpu().double() for p in model.patterns(probe.to(device))]


def _probe_seed(seed: int) -> int:
    """1000 for the public cases; on a hidden seed a number drawn from a generator the grader keys by its secret,
    so the cache below (keyed by it) never hands one key's patterns to another."""
    if not seed:
        return 1000
    return int(torch.randint(0, 2**62, (1,), generator=torch.Generator().manual_seed(1000 + seed)))


@functools.lru_cache(maxsize=4)
def _default_patterns(probe_seed: int) -> tuple[torch.Tensor, ...]:
    return tuple(_model_patterns(_trained_model(), probe_seed))


def _blended(pattern: torch.Tensor, seed: int) -> torch.Tensor:
    """A hand-built pattern; on hidden seeds mixed with 5-15 % of a keyed random causal pattern (rows still sum
    to 1, the heads still what they were built to be)."""
    if not seed:
        return pattern
    share = float(keyed_uniform(seed, 0.05, 0.15))
    scores = 2 * keyed_uniform(seed, -1, 1, tuple(pattern.shape), stream=1)
    noise = masked_softmax(scores, causal_mask(pattern.shape[-1]))
    return (1 - share) * pattern + share * noise


def score_cases(seed: int, with_half_len: bool = False) -> list[Case]:
    """Four patterns (batch, head, q_pos, k_pos), each with its half_len when ``with_half_len``."""
    layer0, layer1 = _default_patterns(_probe_seed(seed))
    raw = [
        ("random causal patterns, batch 3, 4 heads, 10 tokens, half_len 5", _random_causal(seed, 3, 4, 10), 5),
        ("hand-built: a previous-token head and an induction head, 12 tokens, half_len 6",
         _blended(_hand_built(12, 6), seed), 6),
        ("the trained toy model's layer 0 on repeated sequences (half_len 10)", layer0, 10),
        ("the trained toy model's layer 1 on repeated sequences (half_len 10)", layer1, 10),
    ]
    return [Case(label, (pattern, half_len) if with_half_len else (pattern,)) for label, pattern, half_len in raw]


def stripe_mean(pattern, offset, first=0):
    """Mean over the batch and along the stripe ``offset`` from the diagonal (from entry ``first``): (head,)."""
    return pattern.diagonal(offset=offset, dim1=-2, dim2=-1)[..., first:].mean(dim=(0, -1))  # (head,)
