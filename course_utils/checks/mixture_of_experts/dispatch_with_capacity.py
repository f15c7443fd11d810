"""Exercise ``dispatch_with_capacity(x, W_router, experts, k, capacity_factor)``: a top-k MoE block whose
experts each take at most ``capacity`` assignments; the overflow is dropped and rides the residual.

Required form (stated in the notebook): capacity = ceil(capacity_factor · tokens · k / n_experts);
every token's first choice is served before any token's second choice, and within one choice rank in
token order; return ``x + Σ_kept gates[t, slot] · experts[indices[t, slot]](x[t])``, shape
(tokens, d_model), the gates renormalised over all k choices (a dropped assignment keeps its share).
Checked against the course's own capacity code: ``moe_routing.capacity_mask`` and
``moe_dispatch.dispatch_grouped`` with ``kept``. The check runs under ``torch.no_grad``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mixture_of_experts._cases import F64
from course_utils.moe.layer import SwiGLU
from course_utils.moe.dispatch import dispatch_grouped, dispatch_naive
from course_utils.moe.routing import capacity_mask, expert_capacity, top_k_gates


def _routed(x, W_router, n_experts, k, capacity_factor, capacity=None):
    """(gates, indices, kept) of the course's router and capacity code; ``capacity`` overrides the formula."""
    gates, indices = top_k_gates(x @ W_router, k)
    if capacity is None:
        capacity = expert_capacity(x.shape[0], n_experts, k, capacity_factor)
    return gates, indices, capacity_mask(indices, n_experts, capacity)


def dispatch_with_capacity(x, W_router, experts, k, capacity_factor):
    """Reference: x plus every kept assignment's gate-weighted expert output (``capacity_mask`` decides)."""
    gates, indices, kept = _routed(x, W_router, len(experts), k, capacity_factor)
    return x + dispatch_grouped(x, indices, gates, experts, kept)


def _capacity_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, tokens, d_model, n_experts, k, factor in (
        ("16 tokens, 4 experts, k=2, capacity factor 1.1, a router tilted towards experts 0 and 1", 16, 6, 4, 2, 1.1),
        ("20 tokens, 5 experts, k=1 (Switch), capacity factor 1.25, the same kind of router", 20, 6, 5, 1, 1.25),
        ("12 tokens, 4 experts, k=2, capacity factor 0.6: some tokens lose both choices", 12, 4, 4, 2, 0.6),
    ):
        torch.manual_seed(seed * 1000 + tokens)
        experts = [SwiGLU(d_model, 2 * d_model, init_std=0.5).double() for _ in range(n_experts)]
        x = torch.randn(tokens, d_model, generator=gen, dtype=F64) + 0.5  # every token leans the same way ...
        W_router = torch.randn(d_model, n_experts, generator=gen, dtype=F64)
        W_router[:, :2] += 0.4  # ... and experts 0 and 1 score higher along it: they overflow
        cases.append(Case(label, (x, W_router, experts, k, factor)))
    return cases


def _run_no_grad(impl, case: Case):
    with torch.no_grad():
        return impl(*case.args, **case.kwargs)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "token order only",
    "the priority is by choice first: every token's first choice is served before any token's second choice, "
    "and only within one choice rank does token order decide",
)
def _token_order_only(x, W_router, experts, k, capacity_factor):
    gates, indices = top_k_gates(x @ W_router, k)
    capacity = expert_capacity(x.shape[0], len(experts), k, capacity_factor)
    one_hot = F.one_hot(indices.reshape(-1), len(experts))  # token-major: token 0's choices, then token 1's, ...
    position = (one_hot.cumsum(0) * one_hot).sum(-1) - 1
    return x + dispatch_grouped(x, indices, gates, experts, (position < capacity).reshape(indices.shape))


@bank.mistake(
    "capacity without k",
    "each token makes k assignments, so an expert's fair share is tokens · k / n_experts: "
    "capacity = ceil(capacity_factor · tokens · k / n_experts)",
)
def _capacity_without_k(x, W_router, experts, k, capacity_factor):
    capacity = math.ceil(capacity_factor * x.shape[0] / len(experts))
    gates, indices, kept = _routed(x, W_router, len(experts), k, capacity_factor, capacity)
    return x + dispatch_grouped(x, indices, gates, experts, kept)


@bank.mistake(
    "capacity rounded down",
    "the capacity is rounded up (math.ceil): a fractional slot still holds a whole assignment",
)
def _capacity_floor(x, W_router, experts, k, capacity_factor):
    capacity = math.floor(capacity_factor * x.shape[0] * k / len(experts))
    gates, indices, kept = _routed(x, W_router, len(experts), k, capacity_factor, capacity)
    return x + dispatch_grouped(x, indices, gates, experts, kept)


@bank.mistake(
    "no residual",
    "return x plus the experts' contributions: a token whose assignments were all dropped must come out as x "
    "itself (it goes on through the residual), not as zeros",
)
def _no_residual(x, W_router, experts, k, capacity_factor):
    return dispatch_with_capacity(x, W_router, experts, k, capacity_factor) - x


@bank.mistake(
    "nothing dropped", "an expert takes at most capacity assignments: the ones beyond it must add nothing"
)
def _nothing_dropped(x, W_router, experts, k, capacity_factor):
    gates, indices = top_k_gates(x @ W_router, k)
    return x + dispatch_grouped(x, indices, gates, experts)


@bank.mistake(
    "gates renormalised over the kept ones",
    "keep the gates the router gave (renormalised over all k choices): a dropped assignment loses its share, "
    "the kept ones do not grow to fill it",
)
def _renormalised_after_drop(x, W_router, experts, k, capacity_factor):
    gates, indices, kept = _routed(x, W_router, len(experts), k, capacity_factor)
    kept_gates = gates * kept
    total = kept_gates.sum(-1, keepdim=True)
    gates = torch.where(total > 0, kept_gates / total.clamp_min(1e-30), gates)
    return x + dispatch_grouped(x, indices, gates, experts, kept)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("a loop over tokens with a counter per expert, rank by rank")
def _alt_counters(x, W_router, experts, k, capacity_factor):
    probs = torch.softmax(x @ W_router, dim=-1)
    top, indices = probs.topk(k, dim=-1)
    gates = top / top.sum(-1, keepdim=True)
    capacity = math.ceil(capacity_factor * x.shape[0] * k / len(experts))
    used = [0] * len(experts)
    out = x.clone()
    for slot in range(k):
        for t in range(x.shape[0]):
            e = int(indices[t, slot])
            if used[e] < capacity:
                used[e] += 1
                out[t] += gates[t, slot] * experts[e](x[t : t + 1])[0]
    return out


@bank.alternative("GShard's one-hot cumsum for the slot positions, then the per-token loop")
def _alt_cumsum(x, W_router, experts, k, capacity_factor):
    top_logits, indices = (x @ W_router).topk(k, dim=-1)
    gates = torch.softmax(top_logits, dim=-1)  # Mixtral's form of the same gates
    one_hot = F.one_hot(indices.T, len(experts))  # (k, tokens, E), rank-major
    position = (one_hot.reshape(-1, len(experts)).cumsum(0).reshape(one_hot.shape) * one_hot).sum(-1) - 1
    kept = (position < math.ceil(capacity_factor * x.shape[0] * k / len(experts))).T  # (tokens, k)
    return x + dispatch_naive(x, indices, gates, experts, kept)


@bank.alternative("nonzero on the transposed choices, float32")
def _alt_nonzero_float32(x, W_router, experts, k, capacity_factor):
    capacity = math.ceil(capacity_factor * x.shape[0] * k / len(experts))
    top, indices = torch.softmax(x.float() @ W_router.float(), dim=-1).topk(k, dim=-1)
    gates = top / top.sum(-1, keepdim=True)
    out = x.float().clone()
    for e, expert in enumerate(experts):
        slot, token = torch.nonzero(indices.T == e, as_tuple=True)  # first choices first, then token order
        slot, token = slot[:capacity], token[:capacity]
        out.index_add_(0, token, gates[token, slot, None] * expert(x[token]).float())
    return out


DISPATCH_WITH_CAPACITY = Exercise(
    name="dispatch_with_capacity",
    reference=dispatch_with_capacity,
    cases=_capacity_cases,
    run=_run_no_grad,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Route as before, compute the capacity, then let each expert take its assignments in the stated order "
        "until it is full; what does not fit adds nothing, and the residual carries every token on.",
        "Transposing indices to (k, tokens) lists the assignments in priority order (all first choices, then all "
        "second ones); for one expert, the first capacity matches in that order are the ones it keeps.",
    ],
    tolerance="float32",
)
EXERCISES = {DISPATCH_WITH_CAPACITY.name: DISPATCH_WITH_CAPACITY}


def check_dispatch_with_capacity(fn):
    """Check a student's ``dispatch_with_capacity(x, W_router, experts, k, capacity_factor)``."""
    return DISPATCH_WITH_CAPACITY.check(fn)
