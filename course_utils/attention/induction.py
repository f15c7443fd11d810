"""A tiny attention-only transformer that learns to copy, and scores that find its specialised heads.

Covers: ``AttentionOnlyTransformer`` (embeddings, positions, ``n_layers`` causal multi-head
attention layers added to the residual stream, unembedding; no MLPs, no LayerNorm),
``periodic_sequences`` (training data: a random block repeated), ``repeated_sequences`` (random
tokens, then the same tokens again, for measuring), ``train_induction_model`` (seeded from its
own generator, on the device it is given; ``trained_induction_model`` remembers the result within
the process), and two head scores: ``previous_token_scores`` (how much each head looks
one position back) and ``induction_scores`` (how much each head, in the repeat, looks at the
position just *after* the current token's earlier occurrence: the "induction" pattern that lets the
model continue the copy). Leaves out MLPs, LayerNorm and anything about real text.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from course_utils.masking import causal_mask
from course_utils.attention.multihead import MultiHeadAttention
from course_utils.env.threads import torch_threads
from course_utils.validate import int_in, integer, positive_int


@dataclass(frozen=True)
class InductionConfig:
    """The toy task and model; the defaults train in seconds on one CPU thread (notebook 05 times it)."""

    d_vocab: int = 24
    n_ctx: int = 20
    min_period: int = 4  # training sequences repeat a random block of min_period..max_period tokens
    max_period: int = 10
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    steps: int = 400
    batch: int = 64
    lr: float = 2e-2


class AttentionOnlyTransformer(nn.Module):
    """``AttentionOnlyTransformer(InductionConfig())(tokens)`` -> logits of shape (batch, pos, d_vocab).

    Parameters: ``W_E`` (d_vocab, d_model), ``W_pos`` (n_ctx, d_model), ``layers`` of
    ``MultiHeadAttention``, ``W_U`` (d_model, d_vocab). ``generator`` (a CPU torch.Generator), if
    given, draws the initial weights instead of torch's global random state.
    """

    def __init__(self, cfg: InductionConfig, generator: torch.Generator | None = None):
        super().__init__()
        self.cfg = cfg
        self.W_E = nn.Parameter(torch.randn(cfg.d_vocab, cfg.d_model, generator=generator))
        self.W_pos = nn.Parameter(0.1 * torch.randn(cfg.n_ctx, cfg.d_model, generator=generator))
        self.layers = nn.ModuleList(
            MultiHeadAttention(cfg.d_model, cfg.n_heads, generator=generator) for _ in range(cfg.n_layers)
        )
        bound = 1 / cfg.d_model**0.5
        self.W_U = nn.Parameter(torch.empty(cfg.d_model, cfg.d_vocab).uniform_(-bound, bound, generator=generator))

    def _embed(self, tokens: Tensor) -> Tensor:
        if not isinstance(tokens, Tensor) or tokens.ndim != 2 or tokens.shape[1] > self.cfg.n_ctx:
            raise ValueError(
                f"tokens must have shape (batch, pos <= n_ctx={self.cfg.n_ctx}), "
                f"got {tuple(getattr(tokens, 'shape', ())) or type(tokens).__name__}"
            )
        return self.W_E[tokens] + self.W_pos[: tokens.shape[1]]  # (batch, pos, d_model)

    def forward(self, tokens: Int[Tensor, "batch pos"]) -> Float[Tensor, "batch pos d_vocab"]:
        resid = self._embed(tokens)
        mask = causal_mask(tokens.shape[1], device=tokens.device)
        for layer in self.layers:
            resid = resid + layer(resid, mask)
        return resid @ self.W_U  # (batch, pos, d_vocab)

    @torch.no_grad()
    def patterns(self, tokens: Int[Tensor, "batch pos"]) -> list[Float[Tensor, "batch head q_pos k_pos"]]:
        """Every layer's attention pattern on ``tokens``, one tensor per layer."""
        resid = self._embed(tokens)
        mask = causal_mask(tokens.shape[1], device=tokens.device)
        found = []
        for layer in self.layers:
            found.append(layer.pattern(resid, mask))
            resid = resid + layer(resid, mask)
        return found


def repeated_sequences(
    n_seqs: int, half_len: int, d_vocab: int, generator: torch.Generator | None = None
) -> Int[Tensor, "batch pos"]:
    """``n_seqs`` rows of ``half_len`` random tokens followed by the same tokens: ``[5, 2, 7, 5, 2, 7]``."""
    positive_int("n_seqs", n_seqs)
    positive_int("half_len", half_len)
    positive_int("d_vocab", d_vocab)
    first = torch.randint(0, d_vocab, (n_seqs, half_len), generator=generator)
    return torch.cat([first, first], dim=1)  # (batch, 2 * half_len)


def periodic_sequences(
    n_seqs: int, cfg: InductionConfig, generator: torch.Generator | None = None
) -> tuple[Int[Tensor, "batch pos"], Int[Tensor, "batch"]]:
    """Training data: each row repeats its own random block of ``period`` tokens until n_ctx.

    ``[3, 9, 4, 3, 9, 4, 3, ...]`` for period 3. The period varies from row to row, so the copy
    cannot be found from positions alone: the model has to match tokens (an induction head).
    """
    positive_int("n_seqs", n_seqs)
    return _periodic_sequences(n_seqs, cfg, generator)


def _periodic_sequences(n_seqs: int, cfg: InductionConfig, generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
    periods = torch.randint(cfg.min_period, cfg.max_period + 1, (n_seqs,), generator=generator)
    blocks = torch.randint(0, cfg.d_vocab, (n_seqs, cfg.n_ctx), generator=generator)
    index = (
        torch.arange(cfg.n_ctx, device=periods.device)[None, :] % periods[:, None]
    )  # (batch, pos): position within the block
    return blocks.gather(1, index), periods


def repeat_loss(
    logits: Float[Tensor, "batch pos d_vocab"], tokens: Int[Tensor, "batch pos"], periods: Int[Tensor, "batch"]
) -> Tensor:
    """Mean cross-entropy over the next tokens that are repeats (target position >= the row's period)."""
    targets = tokens[:, 1:]  # (batch, pos - 1)
    per_token = nn.functional.cross_entropy(
        logits[:, :-1].transpose(1, 2), targets, reduction="none"
    )  # (batch, pos - 1)
    predictable = (
        torch.arange(1, tokens.shape[1], device=tokens.device)[None, :] >= periods.to(tokens.device)[:, None]
    )  # (batch, pos - 1)
    return per_token[predictable].mean()


def train_induction_model(
    cfg: InductionConfig = InductionConfig(),
    seed: int = 0,
    cpu_threads: int | None = 1,
    device: torch.device | str | None = None,
) -> tuple[AttentionOnlyTransformer, list[float]]:
    """Train from scratch with a fixed seed; returns the model (on ``device``) and every step's loss.

    Weights and data come from a local ``torch.Generator`` seeded with ``seed`` (torch's global
    random state is left alone), drawn on the CPU and then moved to ``device`` (default: CPU), so
    every device starts from the same weights and sees the same batches. On the CPU it runs on
    ``cpu_threads`` threads (restored afterwards; None = leave as is): for a model this small one
    thread is fastest, and on a busy machine several threads can be ten times slower.
    """
    integer("seed", seed)
    with torch_threads(cpu_threads, name="cpu_threads"):
        return _train(cfg, seed, torch.device("cpu" if device is None else device))


@functools.lru_cache(maxsize=4)
def _remembered(cfg: InductionConfig, seed: int, device: str) -> tuple[AttentionOnlyTransformer, tuple[float, ...]]:
    model, losses = train_induction_model(cfg, seed, device=device)
    return model, tuple(losses)


def trained_induction_model(
    cfg: InductionConfig = InductionConfig(), seed: int = 0, device: torch.device | str | None = None
) -> tuple[AttentionOnlyTransformer, list[float]]:
    """``train_induction_model``, trained once per (cfg, seed, device) in this process and remembered.

    Each call returns a fresh copy, so changing the model (switching a head off) never changes what
    the next caller gets; notebook 05 and its checks share one training run this way.
    """
    device = torch.device("cpu" if device is None else device)
    model, losses = _remembered(cfg, seed, str(device))
    return copy.deepcopy(model), list(losses)


def _train(cfg: InductionConfig, seed: int, device: torch.device) -> tuple[AttentionOnlyTransformer, list[float]]:
    gen = torch.Generator().manual_seed(seed)
    model = AttentionOnlyTransformer(cfg, generator=gen).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    losses = []
    for _ in range(cfg.steps):
        tokens, periods = _periodic_sequences(cfg.batch, cfg, gen)
        tokens, periods = tokens.to(device), periods.to(device)
        loss = repeat_loss(model(tokens), tokens, periods)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    return model.eval(), losses


def previous_token_scores(pattern: Float[Tensor, "batch head q_pos k_pos"]) -> Float[Tensor, "head"]:
    """Mean weight each head puts on the position just before the query (queries 1..end).

    A perfect previous-token head scores 1; ``previous_token_scores`` of a pattern that always
    looks at itself scores 0.
    """
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))  # (head,)


def induction_scores(pattern: Float[Tensor, "batch head q_pos k_pos"], half_len: int) -> Float[Tensor, "head"]:
    """Mean weight, over queries in the repeat, on the token after the query's earlier copy.

    Query ``i >= half_len`` holds the same token as ``i - half_len``; an induction head attends to
    ``i - half_len + 1``, the token that came next last time. A perfect induction head scores 1.
    """
    n_ctx = pattern.shape[-1]
    int_in("half_len", half_len, 2, n_ctx // 2, high_name="n_ctx // 2")
    stripe = pattern.diagonal(offset=-(half_len - 1), dim1=-2, dim2=-1)  # (batch, head, n_ctx - half_len + 1)
    return stripe[..., 1:].mean(dim=(0, -1))  # queries half_len .. n_ctx - 1
