"""Inputs shared by the notebook-07 exercises: seeded router logits (tokens × experts) in float64."""

from __future__ import annotations

import torch

F64 = torch.float64


def random_logits(gen: torch.Generator, tokens: int, n_experts: int) -> torch.Tensor:
    """Seeded router logits of shape (tokens, n_experts), spread a little wider than a standard normal."""
    return torch.randn(tokens, n_experts, generator=gen, dtype=F64) * 1.5
