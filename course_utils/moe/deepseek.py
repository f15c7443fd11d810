"""DeepSeek-V3's router as its paper writes it: sigmoid affinities, a bias that steers selection only.

Covers ``deepseek_v3_gates`` (affinity sᵢ = sigmoid(logitᵢ); the k experts with the largest sᵢ + bᵢ
are chosen; their gates are the chosen *unbiased* affinities divided by their sum) and
``sequence_balance_loss``, the small complementary loss DeepSeek-V3 still trains with:
α · Σᵢ fᵢ Pᵢ per sequence, fᵢ = E/(k·T) · (tokens of the sequence sent to expert i) and Pᵢ the mean
over the sequence of sᵢ / Σⱼ sⱼ; it equals α when a sequence's load is perfectly even.
``deepseek_v3_gates(torch.zeros(1, 3), 2, torch.tensor([0., 1., 2.]))`` -> gates ``[[0.5, 0.5]]``,
experts ``[[2, 1]]`` (the bias chose them; the equal affinities 0.5 set the gates).
``deepseek_moe`` is the whole DeepSeekMoE layer: shared experts every token runs through, plus the
routed (fine-grained) experts this router picks, run grouped by expert (``moe_dispatch.dispatch_grouped``).
The bias update itself is ``moe_balancing.update_selection_bias``.
``deepseek_v3_gates(..., n_groups, top_groups)`` adds V3's node-limited (group) routing.
Leaves out the routed scaling factor (2.5 in V3's released config, a
constant factor on every gate) and multi-token prediction.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.moe.dispatch import Expert, dispatch_grouped
from course_utils.moe.routing import check_experts_and_k, check_router_logits
from course_utils.validate import float_tensor, int_at_least, non_negative_number


def _check_bias(selection_bias, n_experts: int) -> Tensor | None:
    if selection_bias is None:
        return None
    float_tensor("selection_bias", selection_bias, "(n_experts,)")
    if tuple(selection_bias.shape) != (n_experts,):
        raise ValueError(f"selection_bias must have shape (n_experts={n_experts},), got {tuple(selection_bias.shape)}")
    return selection_bias


def _limit_to_groups(scores: Tensor, k: int, n_groups, top_groups) -> Tensor:
    """``scores`` with every expert outside a token's ``top_groups`` best groups set to -inf."""
    n_tokens, n_experts = scores.shape
    int_at_least("n_groups", n_groups, 1)
    if n_experts % n_groups or n_experts // n_groups < 2:
        raise ValueError(f"n_groups must split n_experts={n_experts} into groups of 2 or more, got {n_groups}")
    per_group = n_experts // n_groups
    if not (int_at_least("top_groups", top_groups, 1) <= n_groups and k <= top_groups * per_group):
        raise ValueError(
            f"top_groups must be at most n_groups={n_groups} and leave at least k={k} experts, got {top_groups}"
        )
    group_scores = scores.reshape(n_tokens, n_groups, per_group).topk(2, dim=-1).values.sum(-1)  # (tokens, groups)
    best = group_scores.topk(top_groups, dim=-1).indices  # (tokens, top_groups)
    in_best = torch.zeros_like(group_scores, dtype=torch.bool).scatter(-1, best, True)
    return scores.masked_fill(~in_best.repeat_interleave(per_group, dim=-1), float("-inf"))


def deepseek_v3_gates(
    router_logits: Float[Tensor, "tokens n_experts"],
    k: int,
    selection_bias: Float[Tensor, "n_experts"] | None = None,
    n_groups: int = 1,
    top_groups: int = 1,
) -> tuple[Float[Tensor, "tokens k"], Int[Tensor, "tokens k"]]:
    """Sigmoid affinities; top-k of affinity + bias; gates = chosen affinities / their sum.

    With ``n_groups > 1`` (V3's node-limited routing: 256 experts in 8 groups, one a machine), the
    experts are split into ``n_groups`` contiguous groups, each scored by the sum of its two best
    affinity + bias; a token chooses only among the experts of its ``top_groups`` best groups.

    The bias changes *which* experts are chosen and never the gates' values.
    ``deepseek_v3_gates(torch.tensor([[0., 0., 10.]]), 2)`` -> gates ``[[σ(10), 0.5] / (σ(10) + 0.5)]``.
    """
    router_logits = check_router_logits(router_logits)
    check_experts_and_k(router_logits.shape[-1], k)
    bias = _check_bias(selection_bias, router_logits.shape[-1])
    affinity = torch.sigmoid(router_logits)  # (tokens, n_experts), each in (0, 1), not a distribution
    scores = affinity if bias is None else affinity + bias.to(affinity.dtype)
    if n_groups > 1 or top_groups != 1:
        scores = _limit_to_groups(scores, k, n_groups, top_groups)
    indices = scores.topk(k, dim=-1).indices  # (tokens, k): chosen with the bias
    chosen = affinity.gather(-1, indices)  # (tokens, k): valued without it
    return chosen / chosen.sum(dim=-1, keepdim=True), indices


def sequence_balance_loss(
    router_logits: Float[Tensor, "batch pos n_experts"],
    indices: Int[Tensor, "batch pos k"],
    alpha: float = 1e-4,
) -> Float[Tensor, ""]:
    """DeepSeek-V3's sequence-wise balance loss, averaged over the batch's sequences.

    Per sequence of T tokens: fᵢ = E/(k·T) · #{t : i chosen for t}, Pᵢ = mean_t sᵢₜ/Σⱼ sⱼₜ with
    sᵢₜ = sigmoid(logit); loss = α Σᵢ fᵢ Pᵢ. An even load (every fᵢ = 1) gives exactly α.
    ``sequence_balance_loss(torch.zeros(1, 4, 2), torch.tensor([[[0], [1], [0], [1]]]), 1.0)`` -> ``1.0``.
    """
    float_tensor("router_logits", router_logits, "(batch, pos, n_experts)", min_dims=3, finite=False)
    if router_logits.ndim != 3:
        raise ValueError(f"router_logits must have shape (batch, pos, n_experts), got {tuple(router_logits.shape)}")
    if not isinstance(indices, Tensor) or indices.ndim != 3 or indices.shape[:2] != router_logits.shape[:2]:
        raise ValueError(
            f"indices must have shape (batch, pos, k) matching router_logits' (batch, pos) = "
            f"{tuple(router_logits.shape[:2])}, got {getattr(indices, 'shape', type(indices).__name__)}"
        )
    alpha = non_negative_number("alpha", alpha)
    _, n_tokens, n_experts = router_logits.shape
    k = indices.shape[-1]
    check_experts_and_k(n_experts, k)
    counts = F.one_hot(indices, n_experts).sum(dim=2).sum(dim=1)  # (batch, n_experts)
    f = counts.to(router_logits.dtype) * n_experts / (k * n_tokens)
    affinity = torch.sigmoid(router_logits)
    P = (affinity / affinity.sum(dim=-1, keepdim=True)).mean(dim=1)  # (batch, n_experts)
    return alpha * (f * P).sum(dim=-1).mean()


def deepseek_moe(
    x: Float[Tensor, "tokens d_model"],
    W_router: Float[Tensor, "d_model n_experts"],
    selection_bias: Float[Tensor, "n_experts"] | None,
    shared_experts: Sequence[Expert],
    routed_experts: Sequence[Expert],
    k: int,
) -> Float[Tensor, "tokens d_model"]:
    """DeepSeekMoE: Σ shared(x) + Σ over the k routed experts of ``deepseek_v3_gates``' gate · expert(x).

    No residual (added outside the layer), as ``transformers``' ``DeepseekV3MoE`` (one group, scaling
    factor 1). With one shared expert ``s`` and ``k = 1``, each token gets ``s(x) + routed[e](x)``: the
    gate of a single chosen expert is 1.
    """
    float_tensor("x", x, "(tokens, d_model)")
    if x.ndim != 2 or not isinstance(W_router, Tensor) or W_router.shape != (x.shape[-1], len(routed_experts)):
        raise ValueError(
            f"x must be (tokens, d_model) and W_router (d_model, n_routed_experts={len(routed_experts)}), got "
            f"{tuple(x.shape)} and {getattr(W_router, 'shape', type(W_router).__name__)}"
        )
    gates, indices = deepseek_v3_gates(x @ W_router, k, selection_bias)
    out = dispatch_grouped(x, indices, gates, routed_experts)
    for expert in shared_experts:
        out = out + expert(x)
    return out
