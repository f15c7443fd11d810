"""What exercises of different notebooks share: the course's worked example and common properties.

- ``WORKED_LOGITS``: the next-token logits of the running example (CAT, DOG, IS, LOVELY) that
  notebook 04 turns into probabilities (0.772 for CAT) and notebook 09 scores with a loss.
- ``rows_sum_to_one``: the property every probability output has (a softmax, a filtered and
  renormalised distribution), checked in float64 to 1e-5.
- ``no_nan``: the property "the output holds no NaN" (a fully masked row must not poison the rest).
- ``F64`` and ``tiny_model``: float64 for hand-made inputs, and the tiny seeded GPT (weights moved off the
  init, tied embeddings unless asked) that the checks of notebooks 09-11 (build, train, sample) run;
- ``keyed_uniform``: draws that move a hand-made case on the hidden seeds, so it depends on the
  grader's secret like the random cases (``lab/grading/hidden.py``), the public check (seed 0) as written.

Leaves out: anything only one notebook uses (that stays in its package's ``_`` modules).
"""

from __future__ import annotations

import torch

from course_utils.checks.core import Case
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.model import GPT

WORKED_LOGITS = torch.tensor([6.2, 4.9, 2.1, 1.0])  # CAT, DOG, IS, LOVELY


def keyed_uniform(seed: int, low: float, high: float, shape: tuple = (), stream: int = 0) -> torch.Tensor:
    """Uniform float64 draws in [low, high) for a hand-made case on hidden seed ``seed``: its generator is seeded
    with ``seed`` (and ``stream``, one per case), so the grader's secret keys it; the public seed 0 gets none
    (``ValueError``). ``x + keyed_uniform(1, -0.5, 0.5, x.shape)`` moves a worked example by up to half a unit."""
    if not seed:
        raise ValueError("the public cases (seed 0) stay as the notebook shows them: draw only on hidden seeds")
    gen = torch.Generator().manual_seed(1_000_003 * seed + 7919 * (stream + 1))
    return low + (high - low) * torch.rand(shape, generator=gen, dtype=torch.float64)


def rows_sum_to_one(case: Case, out) -> bool:
    """The property "each row sums to 1" (the last dimension), to 1e-5 in float64."""
    return bool(torch.allclose(out.double().sum(-1), torch.ones((), dtype=torch.float64), atol=1e-5))


def no_nan(case: Case, out) -> bool:
    """The property "no NaN": ``out`` is a tensor without a single NaN."""
    return isinstance(out, torch.Tensor) and not torch.isnan(out).any()


def perturbed_gpt(cfg, generator: torch.Generator) -> GPT:
    """A course ``GPT(cfg)`` drawn from ``generator`` by 09's rule and then moved off it (0.3 · noise on every
    weight, so that every parameter matters to a check), in eval mode."""
    model = GPT(cfg)
    model.reset_parameters(generator)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=generator))
    return model.eval()


F64 = torch.float64


def tiny_model(seed: int, d_vocab: int = 23, n_ctx: int = 12, tie_embeddings: bool = True, n_layers: int = 2) -> GPT:
    """A seeded GPT (2 layers unless asked) whose weights are moved off the init, so every parameter matters."""
    gen = torch.Generator().manual_seed(100 + seed)
    cfg = GPTConfig(d_vocab=d_vocab, n_ctx=n_ctx, d_model=16, n_heads=2, n_layers=n_layers,
                    tie_embeddings=tie_embeddings)
    return perturbed_gpt(cfg, gen)
