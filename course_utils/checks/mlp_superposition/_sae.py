"""Inputs shared by notebook 06's sparse-autoencoder exercises: seeded activations that really are sparse
sums of feature directions (as the toy model's hidden layer is), and seeded SAE weights in float64."""

from __future__ import annotations

import torch

F64 = torch.float64


def sparse_activations(gen: torch.Generator, batch: int, d_in: int, n_features: int) -> torch.Tensor:
    """(batch, d_in): each row a sum of a few of ``n_features`` random directions, with positive amounts."""
    directions = torch.randn(n_features, d_in, generator=gen, dtype=F64)  # (n_features, d_in)
    amounts = torch.rand(batch, n_features, generator=gen, dtype=F64)
    amounts = amounts * (torch.rand(batch, n_features, generator=gen) < 0.2)  # about one in five features present
    return amounts @ directions + 0.3  # an offset the decoder bias can learn


def sae_weights(gen: torch.Generator, d_in: int, d_sae: int) -> tuple[torch.Tensor, ...]:
    """(W_enc, b_enc, W_dec, b_dec): decoder rows of unequal lengths and non-zero biases, so that
    forgetting to normalise the rows or to use either bias changes the answer."""
    W_enc = torch.randn(d_in, d_sae, generator=gen, dtype=F64) / d_in**0.5  # (d_in, d_sae)
    b_enc = torch.randn(d_sae, generator=gen, dtype=F64) * 0.2
    lengths = 0.5 + 1.5 * torch.rand(d_sae, 1, generator=gen, dtype=F64)  # rows from 0.5 to 2 long
    W_dec = torch.nn.functional.normalize(torch.randn(d_sae, d_in, generator=gen, dtype=F64), dim=-1) * lengths
    b_dec = torch.randn(d_in, generator=gen, dtype=F64) * 0.3
    return W_enc, b_enc, W_dec, b_dec
