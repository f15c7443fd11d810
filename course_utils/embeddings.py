"""Token embeddings: a token id is a row index into the table W_E (d_vocab × d_model).

Covers: ``embed`` (the lookup), ``one_hot`` and ``embed_via_one_hot`` (the same lookup written as
a matrix product, to show the two agree), ``gradient_descent_step`` (one plain SGD update, for the
worked example), and ``TokenEmbedding``, a minimal ``nn.Module`` holding ``W_E``.

Leaves out: tokenisation (notebook 01), positions (``course_utils.positions``), weight tying with
the unembedding, and optimisers beyond a single plain gradient step.
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn


def _check_ids(token_ids: object, d_vocab: int) -> Tensor:
    if not isinstance(token_ids, torch.Tensor):
        raise TypeError(f"token_ids must be an integer torch.Tensor, got {type(token_ids).__name__}")
    if token_ids.is_floating_point() or token_ids.is_complex() or token_ids.dtype == torch.bool:
        raise TypeError(f"token_ids must have an integer dtype (ids are row numbers), got {token_ids.dtype}")
    if token_ids.numel() and (int(token_ids.min()) < 0 or int(token_ids.max()) >= d_vocab):
        raise ValueError(f"token_ids must lie in [0, d_vocab={d_vocab}), got values from "
                         f"{int(token_ids.min())} to {int(token_ids.max())} (shape {tuple(token_ids.shape)})")
    return token_ids


def _check_table(W_E: object) -> Tensor:
    if not isinstance(W_E, torch.Tensor) or not W_E.is_floating_point():
        raise TypeError(f"W_E must be a floating-point torch.Tensor of shape (d_vocab, d_model), got "
                        f"{getattr(W_E, 'dtype', type(W_E).__name__)}")
    if W_E.ndim != 2:
        raise ValueError(f"W_E must have shape (d_vocab, d_model), got shape {tuple(W_E.shape)}")
    return W_E


def embed(token_ids: Int[Tensor, "... pos"], W_E: Float[Tensor, "d_vocab d_model"]) -> Float[Tensor, "... pos d_model"]:
    """Row ``token_ids[...]`` of ``W_E`` for every id: ``embed(tensor([2, 0]), W_E)`` -> ``W_E[[2, 0]]``."""
    _check_table(W_E)
    _check_ids(token_ids, W_E.shape[0])
    return W_E[token_ids.to(W_E.device)]  # (..., pos, d_model)


def one_hot(token_ids: Int[Tensor, "... pos"], d_vocab: int, dtype: torch.dtype = torch.float32) -> Float[Tensor, "... pos d_vocab"]:
    """One-hot rows: ``one_hot(tensor([1]), 3)`` -> ``tensor([[0., 1., 0.]])``."""
    if isinstance(d_vocab, bool) or not isinstance(d_vocab, int) or d_vocab < 1:
        raise ValueError(f"d_vocab must be a positive int, got {d_vocab!r}")
    _check_ids(token_ids, d_vocab)
    return nn.functional.one_hot(token_ids, d_vocab).to(dtype)  # (..., pos, d_vocab)


def embed_via_one_hot(token_ids: Int[Tensor, "... pos"], W_E: Float[Tensor, "d_vocab d_model"]) -> Float[Tensor, "... pos d_model"]:
    """The lookup as a matrix product, one_hot(ids) @ W_E: equal to ``embed`` but far slower."""
    _check_table(W_E)
    return one_hot(token_ids.to(W_E.device), W_E.shape[0], W_E.dtype) @ W_E  # (..., pos, d_model)


def gradient_descent_step(value: Tensor, grad: Tensor, lr: float) -> Tensor:
    """new = old − lr × grad: ``gradient_descent_step(tensor([0.81]), tensor([0.2]), 0.1)`` -> ``tensor([0.79])``."""
    for name, t in (("value", value), ("grad", grad)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point torch.Tensor, got {getattr(t, 'dtype', type(t).__name__)}")
    if value.shape != grad.shape:
        raise ValueError(f"value and grad must have the same shape, got {tuple(value.shape)} and {tuple(grad.shape)}")
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    return value - lr * grad


class TokenEmbedding(nn.Module):
    """``W_E`` as a learnable table: ``TokenEmbedding(d_vocab=10, d_model=4)(tensor([[3, 1]]))`` -> shape (1, 2, 4).

    ``scale=True`` multiplies by sqrt(d_model), as the original transformer paper does before
    adding its sinusoidal positions (GPT-2 does not).
    """

    def __init__(self, d_vocab: int, d_model: int, scale: bool = False, init_std: float = 0.02):
        super().__init__()
        for name, n in (("d_vocab", d_vocab), ("d_model", d_model)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"{name} must be a positive int, got {n!r}")
        self.d_vocab, self.d_model, self.scale = d_vocab, d_model, scale
        self.W_E = nn.Parameter(torch.randn(d_vocab, d_model) * init_std)

    def forward(self, token_ids: Int[Tensor, "... pos"]) -> Float[Tensor, "... pos d_model"]:
        out = embed(token_ids, self.W_E)  # (..., pos, d_model)
        return out * math.sqrt(self.d_model) if self.scale else out
