"""Exercise ``top_k_router(router_logits, k)``: each token's k most likely experts and their gates.

Required form (stated in the notebook): a pair ``(gates, indices)``, both (tokens, k), the gates
renormalised to sum to 1 per token. The k experts of a token may come in any order, as long as each
gate stays with its expert.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mixture_of_experts._cases import compare_routes, random_logits
from course_utils.moe.routing import top_k_gates


def top_k_router(router_logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference: (gates, indices), both (tokens, k); gates renormalised to sum to 1 per token."""
    return top_k_gates(router_logits, k)


def _router_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("8 tokens, 4 experts, k=2", (random_logits(gen, 8, 4), 2)),
        Case("20 tokens, 8 experts, k=2", (random_logits(gen, 20, 8), 2)),
        Case("6 tokens, 5 experts, k=3", (random_logits(gen, 6, 5), 3)),
        Case("5 tokens, 3 experts, k=1", (random_logits(gen, 5, 3), 1)),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no renormalisation", "the k kept probabilities do not sum to 1: divide them by their own sum")
def _no_renormalisation(router_logits, k):
    return torch.softmax(router_logits, dim=-1).topk(k, dim=-1)


@bank.mistake(
    "raw logits as gates",
    "your gates are raw logits: turn them into probabilities (softmax) before using them as weights",
)
def _raw_logits_as_gates(router_logits, k):
    return router_logits.topk(k, dim=-1)


@bank.mistake(
    "softmax over tokens",
    "the softmax ran over the tokens axis: each token's probabilities are over the experts (dim=-1)",
)
def _softmax_over_tokens(router_logits, k):
    top, indices = torch.softmax(router_logits, dim=0).topk(k, dim=-1)
    return top / top.sum(-1, keepdim=True), indices


@bank.mistake("smallest k", "you picked the k least likely experts: the router keeps the k largest probabilities")
def _smallest_k(router_logits, k):
    top, indices = torch.softmax(router_logits, dim=-1).topk(k, dim=-1, largest=False)
    return top / top.sum(-1, keepdim=True), indices


@bank.mistake(
    "softmax of probabilities",
    "a softmax of probabilities is not a renormalisation: divide the kept probabilities by their sum "
    "(or softmax the kept logits)",
)
def _renormalise_over_all(router_logits, k):
    probs = torch.softmax(router_logits, dim=-1)
    top, indices = probs.topk(k, dim=-1)
    return torch.softmax(top, dim=-1), indices  # a second softmax of probabilities, not of logits


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("softmax over the top-k logits (Mixtral)")
def _alt_mixtral(router_logits, k):
    top, indices = router_logits.topk(k, dim=-1)
    return torch.softmax(top, dim=-1), indices


@bank.alternative("argsort and exp")
def _alt_sort(router_logits, k):
    order = torch.argsort(router_logits, dim=-1, descending=True)[:, :k]
    weights = router_logits.exp().gather(-1, order)
    return weights / weights.sum(-1, keepdim=True), order


@bank.alternative("masked softmax in float32")
def _alt_masked_float32(router_logits, k):
    logits = router_logits.float()
    indices = logits.topk(k, dim=-1).indices
    masked = torch.full_like(logits, float("-inf")).scatter(-1, indices, logits.gather(-1, indices))
    return torch.softmax(masked, dim=-1).gather(-1, indices), indices


@bank.alternative("experts in increasing index order")
def _alt_ascending_order(router_logits, k):
    top, indices = torch.softmax(router_logits, dim=-1).topk(k, dim=-1)
    indices, order = indices.sort(dim=-1)  # experts by index, each gate kept with its expert
    return (top / top.sum(-1, keepdim=True)).gather(-1, order), indices


TOP_K_ROUTER = Exercise(
    name="top_k_router",
    reference=top_k_router,
    cases=_router_cases,
    compare=compare_routes,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Three steps: probabilities over the experts, the k largest of them, then rescale those k so they add up to 1.",
        "torch.topk returns both the values and the indices; the rescaling divides by a sum taken over the last axis "
        "with keepdim=True.",
    ],
    tolerance="float32",
)
EXERCISES = {TOP_K_ROUTER.name: TOP_K_ROUTER}


def check_top_k_router(fn):
    """Check a student's ``top_k_router(router_logits, k)``."""
    return TOP_K_ROUTER.check(fn)
