"""The mixture-of-experts router: which k of E experts each token goes to, with what weight, and which fit.

Covers the argument checks the MoE modules share (``check_experts_and_k``, ``check_router_logits``,
``check_capacity_factor``), the top-k router (``top_k_gates``: softmax over all E experts, keep the k
largest, renormalise them; ``top_k_gates_mixtral``, Mixtral's equivalent softmax over the k largest
logits), an expert capacity (``expert_capacity`` slots per expert, ``capacity_mask`` for which
assignments fit, first choices before second ones) and ``Routing``, the record of one batch's decisions.
``top_k_gates([[log 2, log 1, log 0]], 2)`` -> gates ``[[2/3, 1/3]]``, experts ``[[0, 1]]``.
Leaves out running the experts (``moe_dispatch``), the layer itself (``moe``), load balancing
(``moe_balancing``) and router jitter noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float, Int
from torch import Tensor

from course_utils.validate import float_tensor, has_data, int_at_least, integer, non_negative_int, number


# -- validation at the public boundary -----------------------------------------------------------
# Public functions check their arguments once, here; the layer checks its sizes when it is built and
# its input when it is called, then uses the unchecked ``_``-helpers below. The range messages are
# the module's own wording (notebook 07 prints them).
def check_experts_and_k(n_experts, k) -> tuple[int, int]:
    """``(n_experts, k)`` as ints, or a ValueError/TypeError naming the bad argument."""
    integer("n_experts", n_experts)  # both types first, then the ranges
    integer("k", k)
    int_at_least("n_experts", n_experts, 1)
    int_at_least("k", k, 1)
    if k > n_experts:
        raise ValueError(
            f"k must be at most n_experts={n_experts} (a token cannot pick more experts than exist), got k={k}"
        )
    return n_experts, k


def _check_no_nan(router_logits: Tensor) -> Tensor:
    if has_data(router_logits) and torch.isnan(router_logits).any():  # -inf is allowed: an expert switched off
        raise ValueError("router_logits contain NaN (check the router's input and weights for NaN or overflow)")
    return router_logits


def check_router_logits(router_logits) -> Tensor:
    """A (tokens, n_experts) floating tensor without NaN, or a ValueError/TypeError naming it."""
    float_tensor("router_logits", router_logits, "(tokens, n_experts)", min_dims=2, finite=False)
    if router_logits.ndim != 2:
        raise ValueError(f"router_logits must have shape (tokens, n_experts), got shape {tuple(router_logits.shape)}")
    return _check_no_nan(router_logits)


def check_capacity_factor(capacity_factor) -> float | None:
    """``None`` (no capacity limit) or a positive finite number."""
    if capacity_factor is None:
        return None
    value = number("capacity_factor", capacity_factor)
    if not 0 < value < math.inf:  # also False for NaN
        raise ValueError(f"capacity_factor must be a positive number (or None for no limit), got {capacity_factor}")
    return value


# -- the router ---------------------------------------------------------------------------------
def top_k_gates(
    router_logits: Float[Tensor, "tokens n_experts"], k: int, selection_bias: Float[Tensor, "n_experts"] | None = None
) -> tuple[Float[Tensor, "tokens k"], Int[Tensor, "tokens k"]]:
    """Softmax over all experts, keep the k most probable, renormalise the kept ones to sum to 1.

    ``top_k_gates(torch.tensor([[2., 1., 0.]]).log(), 2)`` -> gates ``[[2/3, 1/3]]``, indices ``[[0, 1]]``.
    Indices come in decreasing order of probability (``torch.topk``'s order). ``selection_bias``
    (DeepSeek-V3's balancing rule, applied here to softmax probabilities) is added to the scores for
    choosing the experts only; the gates stay the renormalised router probabilities. DeepSeek-V3's
    own router (sigmoid affinities) is ``moe_deepseek.deepseek_v3_gates``.
    """
    router_logits = check_router_logits(router_logits)
    check_experts_and_k(router_logits.shape[-1], k)
    return _top_k_gates(torch.softmax(router_logits, dim=-1), k, selection_bias)


def _top_k_gates(probs: Tensor, k: int, selection_bias: Tensor | None) -> tuple[Tensor, Tensor]:
    """``top_k_gates`` on router probabilities (tokens, n_experts) already checked."""
    if selection_bias is None:
        top_probs, indices = probs.topk(k, dim=-1)  # (tokens, k) each
    else:
        indices = (probs + selection_bias.to(probs.dtype)).topk(k, dim=-1).indices
        top_probs = probs.gather(-1, indices)
    return top_probs / top_probs.sum(dim=-1, keepdim=True), indices


def top_k_gates_mixtral(
    router_logits: Float[Tensor, "tokens n_experts"], k: int
) -> tuple[Float[Tensor, "tokens k"], Int[Tensor, "tokens k"]]:
    """Mixtral's form: take the k largest logits, softmax over just those. Equal to ``top_k_gates``.

    ``top_k_gates_mixtral(torch.tensor([[2., 1., 0.]]).log(), 2)`` -> ``[[2/3, 1/3]]``, ``[[0, 1]]``.
    (softmax is monotone, so the same experts win; the common factor Σ exp over all cancels.)
    """
    router_logits = check_router_logits(router_logits)
    check_experts_and_k(router_logits.shape[-1], k)
    top_logits, indices = router_logits.topk(k, dim=-1)  # (tokens, k)
    return torch.softmax(top_logits, dim=-1), indices


# -- capacity -------------------------------------------------------------------------------------
def expert_capacity(n_tokens: int, n_experts: int, k: int, capacity_factor: float) -> int:
    """Slots per expert: ceil(capacity_factor · n_tokens · k / n_experts).
    ``expert_capacity(64, 8, 2, 1.25)`` -> ``20``."""
    non_negative_int("n_tokens", n_tokens)
    check_experts_and_k(n_experts, k)
    capacity_factor = check_capacity_factor(capacity_factor)
    if capacity_factor is None:
        raise ValueError("capacity_factor must be a positive number here, got None")
    return _expert_capacity(n_tokens, n_experts, k, capacity_factor)


def _expert_capacity(n_tokens: int, n_experts: int, k: int, capacity_factor: float) -> int:
    return math.ceil(capacity_factor * n_tokens * k / n_experts)


def capacity_mask(indices: Int[Tensor, "tokens k"], n_experts: int, capacity: int) -> Bool[Tensor, "tokens k"]:
    """Which assignments fit: each expert keeps its first ``capacity``, the rest overflow (dropped).

    Priority: every token's first choice before any second choice, then token order (as in GShard).
    ``capacity_mask(torch.tensor([[0], [0], [1]]), 2, 1)`` -> ``[[True], [False], [True]]``.
    """
    n_tokens, k = indices.shape
    by_rank = indices.T.reshape(-1)  # (k * tokens,) rank-major: all first choices, then all second
    one_hot = F.one_hot(by_rank, n_experts)  # (k * tokens, n_experts)
    position = (one_hot.cumsum(0) * one_hot).sum(-1) - 1  # 0-based slot of each assignment in its expert
    return (position < capacity).reshape(k, n_tokens).T  # (tokens, k)


@dataclass
class Routing:
    """What the router decided for a batch of tokens (flattened to ``tokens = batch * pos``)."""

    logits: Float[Tensor, "tokens n_experts"]
    probs: Float[Tensor, "tokens n_experts"]
    indices: Int[Tensor, "tokens k"]
    gates: Float[Tensor, "tokens k"]
    kept: Bool[Tensor, "tokens k"]
    capacity: int | None

    def load(self) -> Int[Tensor, "n_experts"]:
        """Assignments each expert was asked to take (kept or dropped)."""
        return torch.bincount(self.indices.reshape(-1), minlength=self.probs.shape[-1])

    def dropped(self) -> Int[Tensor, "n_experts"]:
        """Assignments each expert had to drop because it was full."""
        return torch.bincount(self.indices[~self.kept], minlength=self.probs.shape[-1])
