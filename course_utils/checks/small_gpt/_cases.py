"""What the notebook-09 exercises share: float64 for hand-made inputs, and a tiny seeded GPT whose
blocks and sampling the checks run (tied embeddings unless asked otherwise). The class exercises' run
is in ``_classes``."""

from __future__ import annotations

import torch

from course_utils.gpt.model import GPT
from course_utils.gpt.config import GPTConfig
from course_utils.checks.shared import perturbed_gpt

F64 = torch.float64


def tiny_model(seed: int, d_vocab: int = 23, n_ctx: int = 12, tie_embeddings: bool = True, n_layers: int = 2) -> GPT:
    """A seeded GPT (2 layers unless asked) whose weights are moved off the init, so every parameter matters."""
    gen = torch.Generator().manual_seed(100 + seed)
    cfg = GPTConfig(d_vocab=d_vocab, n_ctx=n_ctx, d_model=16, n_heads=2, n_layers=n_layers,
                    tie_embeddings=tie_embeddings)
    return perturbed_gpt(cfg, gen)

