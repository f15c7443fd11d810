"""Small models the tests share: built from a seed, so every test file that uses one sees the same weights."""

import torch

from course_utils.gpt import GPT, GPTConfig


def sharp_gpt(cfg: GPTConfig, seed: int = 0) -> GPT:
    """A ``GPT(cfg)`` seeded with ``seed``, its weights pushed by 0.3 x noise so that its distributions are
    sharper than at initialisation (a wrong cache or a wrong ablation then changes the tokens), in eval mode."""
    torch.manual_seed(seed)
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model.eval()
