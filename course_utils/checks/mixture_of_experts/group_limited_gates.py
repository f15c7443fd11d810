"""Exercise ``group_limited_gates(router_logits, selection_bias, k, n_groups, top_groups)``: DeepSeek-V3's
router with node-limited routing, a token's k experts drawn from its ``top_groups`` best groups only.

Required form (stated in the notebook): affinities sigmoid(router_logits), scores affinity + bias; the
experts split into ``n_groups`` contiguous groups, each scored by the sum of its two best scores; every
expert outside a token's ``top_groups`` best groups ruled out; the k best remaining scores chosen; gates
the chosen affinities (without the bias) over their sum. Returns ``(gates, indices)``, both (tokens, k),
in any order of a token's k experts. Checked against ``moe_deepseek.deepseek_v3_gates`` with groups
(itself tested against ``transformers``' ``DeepseekV3TopkRouter``).
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mixture_of_experts._cases import F64, compare_routes, random_logits
from course_utils.moe.deepseek import deepseek_v3_gates


def group_limited_gates(router_logits, selection_bias, k, n_groups, top_groups):
    """Reference: ``moe_deepseek.deepseek_v3_gates`` with ``n_groups`` and ``top_groups``."""
    return deepseek_v3_gates(router_logits, k, selection_bias, n_groups, top_groups)


def _cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, tokens, n_experts, k, n_groups, top_groups in (
        ("24 tokens, 16 experts in 4 groups, the best 2 groups, k=4", 24, 16, 4, 4, 2),
        ("20 tokens, 12 experts in 3 groups, the best group only, k=2", 20, 12, 2, 3, 1),
        ("16 tokens, 8 experts in 4 groups of 2, the best 3 groups, k=3, a bias that makes most scores negative",
         16, 8, 3, 4, 3),
    ):
        if "negative" in label:  # between -1.5 and -0.9 (the notebook's own goes to -0.9): a ruled-out expert
            bias = -0.9 - 0.6 * torch.rand(n_experts, generator=gen, dtype=F64)  # must score -inf, not 0
        else:
            bias = torch.randn(n_experts, generator=gen, dtype=F64) * 0.2
        cases.append(Case(label, (random_logits(gen, tokens, n_experts), bias, k, n_groups, top_groups)))
    return cases


def _masked(scores, n_groups, top_groups, group_scores):
    tokens, n_experts = scores.shape
    best = group_scores.topk(top_groups, dim=-1).indices
    keep = torch.zeros_like(group_scores, dtype=torch.bool).scatter(-1, best, True)
    return scores.masked_fill(~keep.repeat_interleave(n_experts // n_groups, dim=-1), float("-inf"))


def _gates(affinity, scores, k):
    indices = scores.topk(k, dim=-1).indices
    chosen = affinity.gather(-1, indices)
    return chosen / chosen.sum(-1, keepdim=True), indices


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "no group limit", "a token may only choose experts in its top_groups best groups: rule out all the others first"
)
def _no_limit(router_logits, selection_bias, k, n_groups, top_groups):
    return deepseek_v3_gates(router_logits, k, selection_bias)


@bank.mistake(
    "group scored by its best expert",
    "a group's score is the sum of its two best scores, so that one strong expert alone does not carry its group",
)
def _best_only(router_logits, selection_bias, k, n_groups, top_groups):
    affinity = torch.sigmoid(router_logits)
    scores = affinity + selection_bias
    group_scores = scores.reshape(scores.shape[0], n_groups, -1).amax(dim=-1)
    return _gates(affinity, _masked(scores, n_groups, top_groups, group_scores), k)


@bank.mistake(
    "interleaved groups",
    "the groups are contiguous blocks of experts: group 0 is experts 0 .. E/n_groups - 1, reshape to "
    "(tokens, n_groups, E // n_groups)",
)
def _interleaved(router_logits, selection_bias, k, n_groups, top_groups):
    affinity = torch.sigmoid(router_logits)
    scores = affinity + selection_bias
    tokens, n_experts = scores.shape
    group_scores = scores.reshape(tokens, n_experts // n_groups, n_groups).topk(2, dim=1).values.sum(dim=1)
    keep = torch.zeros_like(group_scores, dtype=torch.bool).scatter(
        -1, group_scores.topk(top_groups, dim=-1).indices, True
    )
    return _gates(affinity, scores.masked_fill(~keep.repeat(1, n_experts // n_groups), float("-inf")), k)


@bank.mistake(
    "groups scored without the bias",
    "score the groups with the same scores the experts are chosen by: affinity plus the bias",
)
def _groups_without_bias(router_logits, selection_bias, k, n_groups, top_groups):
    affinity = torch.sigmoid(router_logits)
    group_scores = affinity.reshape(affinity.shape[0], n_groups, -1).topk(2, dim=-1).values.sum(-1)
    return _gates(affinity, _masked(affinity + selection_bias, n_groups, top_groups, group_scores), k)


@bank.mistake(
    "ruled-out experts zeroed",
    "rule an expert out with -inf, not 0: scores can be negative (the bias goes below zero), and a zeroed expert "
    "then beats the allowed ones",
)
def _zeroed(router_logits, selection_bias, k, n_groups, top_groups):
    scores = torch.sigmoid(router_logits) + selection_bias
    masked = _masked(scores, n_groups, top_groups, scores.unflatten(-1, (n_groups, -1)).topk(2, dim=-1).values.sum(-1))
    return _gates(scores - selection_bias, masked.masked_fill(masked.isneginf(), 0.0), k)  # 0 where -inf belongs


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("a loop over tokens with Python sets")
def _alt_loop(router_logits, selection_bias, k, n_groups, top_groups):
    affinity = torch.sigmoid(router_logits)
    scores = affinity + selection_bias
    size = scores.shape[1] // n_groups
    all_gates, all_indices = [], []
    for row, s in zip(affinity, scores):
        group_score = [s[g * size : (g + 1) * size].topk(2).values.sum() for g in range(n_groups)]
        groups = set(torch.stack(group_score).topk(top_groups).indices.tolist())
        allowed = [e for e in range(len(s)) if e // size in groups]
        best = sorted(allowed, key=lambda e: -s[e])[:k]
        all_gates.append(row[best] / row[best].sum())
        all_indices.append(torch.tensor(best))
    return torch.stack(all_gates), torch.stack(all_indices)


@bank.alternative("sorted groups and a view, in float32")
def _alt_sorted(router_logits, selection_bias, k, n_groups, top_groups):
    affinity = router_logits.float().sigmoid()
    scores = affinity + selection_bias.float()
    grouped = scores.view(scores.shape[0], n_groups, -1)
    group_scores = grouped.sort(dim=-1, descending=True).values[..., :2].sum(-1)
    kept = group_scores.argsort(dim=-1, descending=True)[:, :top_groups]
    mask = torch.full_like(group_scores, float("-inf")).scatter(-1, kept, 0.0)  # 0 for kept groups, -inf else
    masked = (grouped + mask[..., None]).flatten(1)
    return _gates(affinity, masked, k)


@bank.alternative("unflatten, a comparison with the best groups, torch.where")
def _alt_where(router_logits, selection_bias, k, n_groups, top_groups):
    affinity = torch.sigmoid(router_logits)
    scores = (affinity + selection_bias).unflatten(-1, (n_groups, -1))  # (tokens, groups, per group)
    best = scores.topk(2, dim=-1).values.sum(-1).topk(top_groups, dim=-1).indices  # (tokens, top_groups)
    allowed = (torch.arange(n_groups)[None, :, None] == best[:, None, :]).any(-1)[..., None].expand_as(scores)
    indices = torch.where(allowed, scores, torch.full_like(scores, -torch.inf)).flatten(1).topk(k, dim=-1).indices
    chosen = torch.gather(affinity, 1, indices)
    return chosen / chosen.sum(1, keepdim=True), indices


GROUP_LIMITED_GATES = Exercise(
    name="group_limited_gates",
    reference=group_limited_gates,
    cases=_cases,
    compare=compare_routes,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two rounds of choosing: first each token's best groups (a group scored by its two best experts), then the "
        "k best experts among those groups only. The gates come from the affinities, as in DeepSeek-V3's router.",
        "Reshape the scores to (tokens, n_groups, experts per group) to score the groups, build a boolean mask of "
        "the kept groups with scatter, widen it back to every expert with repeat_interleave, and masked_fill the "
        "rest with -inf before the last topk.",
    ],
    tolerance="float32",
)
EXERCISES = {GROUP_LIMITED_GATES.name: GROUP_LIMITED_GATES}


def check_group_limited_gates(fn):
    """Check a student's ``group_limited_gates(router_logits, selection_bias, k, n_groups, top_groups)``."""
    return GROUP_LIMITED_GATES.check(fn)
