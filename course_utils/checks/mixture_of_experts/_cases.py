"""What the notebook-07 exercises share: seeded router logits (tokens × experts) in float64, and the
comparison of two routings (gates, indices) that accepts any order of a token's k experts."""

from __future__ import annotations

import torch

from course_utils.checks.compare import describe_mismatch
from course_utils.tolerances import teaching_tolerance

F64 = torch.float64


def random_logits(gen: torch.Generator, tokens: int, n_experts: int) -> torch.Tensor:
    """Seeded router logits of shape (tokens, n_experts), spread a little wider than a standard normal."""
    return torch.randn(tokens, n_experts, generator=gen, dtype=F64) * 1.5


def _by_expert(result):
    """(gates, indices) with each row put in increasing expert order, so any order of the k passes."""
    if not (
        isinstance(result, (tuple, list)) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)
    ):
        return result
    gates, indices = result
    if gates.shape != indices.shape or indices.is_floating_point():
        return result
    indices, order = indices.long().sort(dim=-1)
    return gates.gather(-1, order), indices


def compare_routes(expected, got) -> str | None:
    """``None`` when two (gates, indices) routings agree, whatever order each token's k experts come in."""
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        return f"expected a pair (gates, indices), got {type(got).__name__}"
    return describe_mismatch(_by_expert(expected), _by_expert(tuple(got)), tol=teaching_tolerance("float32"))
