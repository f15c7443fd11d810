"""Exercise ``expert_choice(x, W_router, experts, capacity_factor)``: expert-choice routing, each expert
picks its favourite tokens instead of each token picking its experts.

Required form (stated in the notebook): probabilities softmax(x @ W_router) over the experts of each
token; capacity = ceil(capacity_factor · tokens / n_experts); expert e takes the capacity tokens with the
largest probability for it, each weighted by that probability; return the (tokens, d_model) sum of those
weighted outputs, zeros for a token no expert took, no residual. Checked against the course's
``moe_expert_choice.expert_choice``. The check runs under ``torch.no_grad``.
"""

from __future__ import annotations

import math

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mixture_of_experts._cases import F64
from course_utils.moe.layer import SwiGLU
from course_utils.moe.expert_choice import expert_choice as _expert_choice
from course_utils.moe.expert_choice import expert_choice_routing


def expert_choice(x, W_router, experts, capacity_factor):
    """Reference: the course's ``moe_expert_choice.expert_choice``."""
    return _expert_choice(x, W_router, experts, capacity_factor)


def _expert_choice_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, tokens, d_model, n_experts, factor in (
        ("16 tokens, 4 experts, capacity factor 1.0", 16, 6, 4, 1.0),
        ("20 tokens, 6 experts, capacity factor 2.0 (each expert takes 7 tokens)", 20, 8, 6, 2.0),
        ("10 tokens, 3 experts, capacity factor 0.5", 10, 4, 3, 0.5),
    ):
        torch.manual_seed(seed * 1000 + tokens)
        experts = [SwiGLU(d_model, 2 * d_model, init_std=0.5).double() for _ in range(n_experts)]
        x = torch.randn(tokens, d_model, generator=gen, dtype=F64)
        W_router = torch.randn(d_model, n_experts, generator=gen, dtype=F64)
        cases.append(Case(label, (x, W_router, experts, factor)))
    return cases


def _run_no_grad(impl, case: Case):
    with torch.no_grad():
        return impl(*case.args, **case.kwargs)


def _combine(x, gates, chosen, experts):
    out = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        out.index_add_(0, chosen[e], gates[e, :, None] * expert(x[chosen[e]]))
    return out


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "softmax over the tokens",
    "the probabilities are each token's softmax over the experts (dim=-1); the experts then compare the tokens' "
    "probabilities for them",
)
def _softmax_over_tokens(x, W_router, experts, capacity_factor):
    capacity = math.ceil(capacity_factor * x.shape[0] / len(experts))
    gates, chosen = torch.softmax(x @ W_router, dim=0).T.topk(capacity, dim=-1)
    return _combine(x, gates, chosen, experts)


@bank.mistake(
    "tokens choose",
    "the experts choose here: for each expert, the capacity tokens with the largest probability for it (topk "
    "along the tokens), not each token's most likely experts",
)
def _tokens_choose(x, W_router, experts, capacity_factor):
    k = max(1, round(capacity_factor))
    probs = torch.softmax(x @ W_router, dim=-1)
    top, indices = probs.topk(k, dim=-1)
    out = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        token, slot = torch.where(indices == e)
        out.index_add_(0, token, top[token, slot, None] * expert(x[token]))
    return out


@bank.mistake("gates ignored", "weight each expert's output by the probability the token has for that expert")
def _unweighted(x, W_router, experts, capacity_factor):
    gates, chosen = expert_choice_routing(x @ W_router, capacity_factor)
    return _combine(x, torch.ones_like(gates), chosen, experts)


@bank.mistake(
    "capacity without the factor",
    "each expert takes ceil(capacity_factor · tokens / n_experts) tokens: the factor sets how many experts a token "
    "gets on average",
)
def _no_factor(x, W_router, experts, capacity_factor):
    return _expert_choice(x, W_router, experts, 1.0)


@bank.mistake(
    "gates renormalised per expert",
    "keep the router's probabilities as the gates: do not rescale an expert's chosen gates to sum to 1",
)
def _renormalised(x, W_router, experts, capacity_factor):
    gates, chosen = expert_choice_routing(x @ W_router, capacity_factor)
    return _combine(x, gates / gates.sum(-1, keepdim=True), chosen, experts)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("argsort along the tokens, float32")
def _alt_argsort(x, W_router, experts, capacity_factor):
    capacity = math.ceil(capacity_factor * x.shape[0] / len(experts))
    probs = torch.softmax(x.float() @ W_router.float(), dim=-1)
    out = torch.zeros(x.shape, dtype=torch.float32)
    for e, expert in enumerate(experts):
        chosen = torch.argsort(probs[:, e], descending=True)[:capacity]
        out[chosen] += probs[chosen, e, None] * expert(x[chosen]).float()
    return out


@bank.alternative("a dense (tokens, experts) combine matrix and einsum")
def _alt_dense(x, W_router, experts, capacity_factor):
    capacity = math.ceil(capacity_factor * x.shape[0] / len(experts))
    probs = torch.softmax(x @ W_router, dim=-1)  # (tokens, E)
    gates, chosen = probs.topk(capacity, dim=0)  # (capacity, E): each column an expert's choice
    combine = torch.zeros_like(probs).scatter(0, chosen, gates)  # (tokens, E)
    outputs = torch.stack([expert(x) for expert in experts], dim=1)  # (tokens, E, d_model)
    return torch.einsum("te,ted->td", combine, outputs)


@bank.alternative("Mixtral-style names, index_put_ with accumulate")
def _alt_index_put(x, W_router, experts, capacity_factor):
    scores = (x @ W_router).softmax(-1).transpose(0, 1)  # (E, tokens)
    weights, token_ids = torch.topk(scores, math.ceil(capacity_factor * x.shape[0] / len(experts)))
    out = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        out.index_put_((token_ids[e],), weights[e, :, None] * expert(x[token_ids[e]]), accumulate=True)
    return out


EXPERT_CHOICE = Exercise(
    name="expert_choice",
    reference=expert_choice,
    cases=_expert_choice_cases,
    run=_run_no_grad,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Same probabilities as in token choice, read the other way: for each expert, a column of the (tokens, "
        "experts) table, from which it keeps its capacity best tokens.",
        "Transpose the probabilities to (experts, tokens) and take topk along the last axis: you get, per expert, "
        "the gates and the token indices at once; then run each expert on its tokens and index_add_ the result.",
    ],
    tolerance="float32",
)
EXERCISES = {EXPERT_CHOICE.name: EXPERT_CHOICE}


def check_expert_choice(fn):
    """Check a student's ``expert_choice(x, W_router, experts, capacity_factor)``."""
    return EXPERT_CHOICE.check(fn)
