"""Expert-choice routing (Zhou et al. 2022): each expert picks its ``capacity`` favourite tokens.

Covers ``expert_choice_routing`` (the router: a softmax over the experts for every token, then, per
expert, the ``capacity = ceil(capacity_factor · tokens / n_experts)`` tokens with the largest
probability for it, those probabilities as gates) and ``expert_choice`` (the layer without the
residual: every expert runs once, on exactly its chosen tokens, and each output row is the
gate-weighted sum over the experts that chose the token). Every expert does the same work by
construction, so no balancing loss is needed; a token may be chosen by several experts or by none,
and the choice of a token depends on the other tokens of the batch (later ones included), which is
why it suits encoders and training more than token-by-token decoding.
``expert_choice_routing(torch.tensor([[2., 1.], [1., 2.], [1., 1.]]).log(), 1.0)`` -> capacity 2:
expert 0 takes tokens 0 and 2, expert 1 tokens 1 and 2.
Leaves out the paper's variants with a capacity per group and a per-token cap.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.moe.dispatch import Expert
from course_utils.moe.routing import _expert_capacity, check_capacity_factor, check_router_logits


def expert_choice_routing(
    router_logits: Float[Tensor, "tokens n_experts"], capacity_factor: float
) -> tuple[Float[Tensor, "n_experts capacity"], Int[Tensor, "n_experts capacity"]]:
    """(gates, tokens), both (n_experts, capacity): each expert's chosen tokens, by decreasing probability."""
    router_logits = check_router_logits(router_logits)
    n_tokens, n_experts = router_logits.shape
    factor = check_capacity_factor(capacity_factor)
    if factor is None or factor > n_experts:
        raise ValueError(
            f"capacity_factor must be a positive number at most n_experts={n_experts} (an expert cannot take more "
            f"than every token), got {capacity_factor}"
        )
    capacity = _expert_capacity(n_tokens, n_experts, 1, factor)
    probs = torch.softmax(router_logits, dim=-1)  # (tokens, n_experts): over the experts, as in token choice
    return probs.T.topk(capacity, dim=-1)  # (n_experts, capacity): each expert's favourite tokens


def expert_choice(
    x: Float[Tensor, "tokens d_model"],
    W_router: Float[Tensor, "d_model n_experts"],
    experts: Sequence[Expert],
    capacity_factor: float,
) -> Float[Tensor, "tokens d_model"]:
    """Σ over the experts that chose token t of gate · expert(x_t); zeros for a token no expert chose."""
    if not isinstance(x, Tensor) or x.ndim != 2:
        raise ValueError(f"x must have shape (tokens, d_model), got {getattr(x, 'shape', type(x).__name__)}")
    if not isinstance(W_router, Tensor) or W_router.shape != (x.shape[-1], len(experts)):
        raise ValueError(
            f"W_router must have shape (d_model={x.shape[-1]}, n_experts={len(experts)}), "
            f"got {getattr(W_router, 'shape', type(W_router).__name__)}"
        )
    gates, chosen = expert_choice_routing(x @ W_router, capacity_factor)
    out = torch.zeros(x.shape, dtype=torch.result_type(x, gates), device=x.device)
    for e, expert in enumerate(experts):
        out.index_add_(0, chosen[e], gates[e, :, None] * expert(x.index_select(0, chosen[e])))
    return out.to(x.dtype)
