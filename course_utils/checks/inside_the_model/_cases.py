"""What the exercises of notebook 13 share: a small seeded GPT whose every weight matters."""

from __future__ import annotations

import torch

from course_utils.checks.shared import perturbed_gpt
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.model import GPT


def tiny_gpt(seed: int, n_layers: int = 2, tie_embeddings: bool = False) -> GPT:
    """A seeded GPT (d_vocab 19, n_ctx 10, d_model 16, 2 heads) moved off its init, in eval mode."""
    gen = torch.Generator().manual_seed(200 + seed)
    cfg = GPTConfig(d_vocab=19, n_ctx=10, d_model=16, n_heads=2, n_layers=n_layers, tie_embeddings=tie_embeddings)
    return perturbed_gpt(cfg, gen)


def tiny_tokens(seed: int, batch: int, pos: int) -> torch.Tensor:
    """(batch, pos) token ids below 19 from a generator seeded ``seed``."""
    return torch.randint(0, 19, (batch, pos), generator=torch.Generator().manual_seed(300 + seed))
