"""What the notebook-09 exercises share: float64 for hand-made inputs, a tiny seeded GPT whose
blocks and sampling the checks run, and the run of a class exercise (build the student's module from a
config, load the course's weights by name, call it: ``run_class``)."""

from __future__ import annotations

import torch

from course_utils.checks.weights import convention_answer
from course_utils.gpt import GPT
from course_utils.gpt_config import GPTConfig, check_state_dict

F64 = torch.float64


def tiny_model(seed: int, d_vocab: int = 23, n_ctx: int = 12, tie_embeddings: bool = True) -> GPT:
    """A seeded 2-layer GPT whose weights are moved off the init, so every parameter matters."""
    gen = torch.Generator().manual_seed(100 + seed)
    cfg = GPTConfig(d_vocab=d_vocab, n_ctx=n_ctx, d_model=16, n_heads=2, n_layers=2, tie_embeddings=tie_embeddings)
    model = GPT(cfg)
    model.reset_parameters(gen)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen))
    return model.eval()


def course_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A course module's weights in float64, for loading into a student's module of the same layout."""
    return {name: t.detach().double().clone() for name, t in model.state_dict().items()}


def load_course_state(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> str | None:
    """Load ``state`` into the student's ``module`` (made float64 first); None, or one line on what stops it."""
    try:
        check_state_dict(module.double(), state)
    except ValueError as error:
        return (
            f"{error}; the check loads the course's weights by name, so keep the parameter names and shapes "
            "the notebook lists (those of course_utils.gpt)"
        )
    module.load_state_dict(state)
    return None


def run_class(cls, case):
    """Build the student's module from the case's config, load the course's weights, run it on the input."""
    cfg, state, x = case.args
    module = cls(cfg)
    problem = load_course_state(module, state)
    if problem is not None:
        return convention_answer(problem)
    with torch.no_grad():
        return module(x)
