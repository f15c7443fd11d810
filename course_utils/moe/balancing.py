"""Keeping a router's load spread out: the Switch auxiliary loss, the router z-loss, DeepSeek-V3's bias.

Covers ``load_balancing_loss`` (α · E · Σᵢ fᵢ · Pᵢ with fᵢ the share of the T·k assignments sent
to expert i and Pᵢ the mean router probability of expert i over all tokens; α at perfectly uniform
routing), ``router_z_loss`` (mean squared log-sum-exp of the logits), the auxiliary-loss-free bias
update of DeepSeek-V3 (``update_selection_bias``) and two summaries of a load (``load_shares``,
``usage_entropy``). The training experiment is ``course_utils.moe.experiment``.
DeepSeek-V3's sequence-wise loss and sigmoid router are in ``course_utils.moe.deepseek``.
Leaves out device-level balancing losses and expert-choice routing.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.moe.routing import check_experts_and_k, check_router_logits
from course_utils.validate import non_negative_number, number


def load_balancing_loss(
    router_logits: Float[Tensor, "tokens n_experts"],
    k: int,
    alpha: float = 1.0,
    indices: Int[Tensor, "tokens k"] | None = None,
) -> Float[Tensor, ""]:
    """The Switch Transformer loss α · E · Σᵢ fᵢ · Pᵢ, generalised to top-k routing.

    fᵢ = (assignments to expert i) / (T · k), so Σ fᵢ = 1; Pᵢ = mean over tokens of softmax(logits)ᵢ
    over **all** E experts. The gradient reaches the router through Pᵢ (fᵢ counts are not
    differentiable). ``indices`` default to the top-k of the probabilities; pass the router's own
    choices when they differ (e.g. with a selection bias).
    ``load_balancing_loss(torch.zeros(4, 8), 2)`` -> ``1.0`` (uniform routing gives exactly α).
    """
    router_logits = check_router_logits(router_logits)
    check_experts_and_k(router_logits.shape[-1], k)
    number("alpha", alpha)
    return _load_balancing_loss(router_logits, k, alpha, indices)


def _load_balancing_loss(router_logits: Tensor, k: int, alpha: float, indices: Tensor | None) -> Tensor:
    """``load_balancing_loss`` on arguments already checked (the layer's own routing, every training step)."""
    n_tokens, n_experts = router_logits.shape
    probs = torch.softmax(router_logits, dim=-1)  # (tokens, n_experts)
    if indices is None:
        indices = probs.topk(k, dim=-1).indices  # (tokens, k)
    counts = F.one_hot(indices, n_experts).sum(dim=(0, 1))  # (n_experts,) assignments per expert
    f = counts.to(probs.dtype) / (n_tokens * k)
    P = probs.mean(dim=0)  # (n_experts,)
    return alpha * n_experts * (f * P).sum()


def router_z_loss(router_logits: Float[Tensor, "tokens n_experts"]) -> Float[Tensor, ""]:
    """ST-MoE's z-loss: mean over tokens of (log Σⱼ exp logitⱼ)², which keeps the logits small.

    ST-MoE adds it to the training loss with the coefficient c_z = 1e-3.

    ``router_z_loss(torch.zeros(2, 4))`` -> ``(ln 4)² = 1.9218``.
    """
    router_logits = check_router_logits(router_logits)
    return torch.logsumexp(router_logits, dim=-1).pow(2).mean()


def update_selection_bias(
    bias: Float[Tensor, "n_experts"], load: Int[Tensor, "n_experts"], rate: float
) -> Float[Tensor, "n_experts"]:
    """DeepSeek-V3's auxiliary-loss-free step: raise the bias of under-loaded experts, lower the others'.

    bᵢ ← bᵢ + rate · sign(mean load − loadᵢ). ``update_selection_bias(torch.zeros(2), torch.tensor([3, 1]), 0.1)``
    -> ``[-0.1, 0.1]``. The bias only changes which experts are chosen, never the gates.
    """
    non_negative_number("rate", rate)
    load = load.to(bias.dtype)
    return bias + rate * torch.sign(load.mean() - load)


def load_shares(indices: Int[Tensor, "tokens k"], n_experts: int) -> Float[Tensor, "n_experts"]:
    """The share of all assignments each expert received (sums to 1). ``[[0], [0], [1]]``, 2 -> ``[2/3, 1/3]``."""
    counts = torch.bincount(indices.reshape(-1), minlength=n_experts).double()
    return counts / counts.sum()


def usage_entropy(shares: Float[Tensor, "n_experts"]) -> float:
    """Entropy of the load in bits: log₂ E when perfectly even, 0 when one expert takes everything."""
    shares = shares.double()
    nonzero = shares[shares > 0]
    return float(-(nonzero * nonzero.log2()).sum())


def max_entropy_bits(n_experts: int) -> float:
    """log₂ E, the entropy of a perfectly even load."""
    return math.log2(n_experts)
