"""Exercise ``deepseek_moe(x, W_router, selection_bias, shared_experts, routed_experts, k)``: DeepSeekMoE,
shared experts for every token plus fine-grained routed experts chosen by DeepSeek-V3's router.

Required form (stated in the notebook): affinities sigmoid(x @ W_router); the k routed experts with the
largest affinity + selection_bias; gates = the chosen affinities (without the bias) over their sum;
return Σ_shared expert(x) + Σ_chosen gate · expert(x), shape (tokens, d_model), no residual.
Checked against the course's ``moe_deepseek.deepseek_moe`` (itself tested against ``transformers``'
``DeepseekV3MoE``). The check runs under ``torch.no_grad``.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mixture_of_experts._cases import F64
from course_utils.moe.layer import SwiGLU
from course_utils.moe.deepseek import deepseek_moe as _deepseek_moe
from course_utils.moe.deepseek import deepseek_v3_gates
from course_utils.moe.dispatch import dispatch_grouped, dispatch_naive


def deepseek_moe(x, W_router, selection_bias, shared_experts, routed_experts, k):
    """Reference: the course's ``moe_deepseek.deepseek_moe``."""
    return _deepseek_moe(x, W_router, selection_bias, shared_experts, routed_experts, k)


def _deepseek_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, tokens, d_model, n_shared, n_routed, k in (
        ("14 tokens, d_model 8, 1 shared + 8 routed experts, k=2", 14, 8, 1, 8, 2),
        ("20 tokens, d_model 6, 2 shared + 12 fine-grained routed experts, k=4", 20, 6, 2, 12, 4),
        ("9 tokens, d_model 4, 1 shared + 6 routed experts, k=3", 9, 4, 1, 6, 3),
    ):
        torch.manual_seed(seed * 1000 + tokens)
        shared = [SwiGLU(d_model, d_model, init_std=0.5).double() for _ in range(n_shared)]
        routed = [SwiGLU(d_model, d_model, init_std=0.5).double() for _ in range(n_routed)]
        x = torch.randn(tokens, d_model, generator=gen, dtype=F64)
        W_router = torch.randn(d_model, n_routed, generator=gen, dtype=F64) * 0.7
        bias = torch.randn(n_routed, generator=gen, dtype=F64) * 0.3  # large enough to change some choices
        cases.append(Case(label, (x, W_router, bias, shared, routed, k)))
    return cases


def _run_no_grad(impl, case: Case):
    with torch.no_grad():
        return impl(*case.args, **case.kwargs)


def _with_gates(x, gates, indices, shared_experts, routed_experts):
    return dispatch_grouped(x, indices, gates, routed_experts) + sum(expert(x) for expert in shared_experts)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "softmax affinities",
    "DeepSeek-V3's affinities are sigmoids of the logits, each on its own, not a softmax over the experts",
)
def _softmax(x, W_router, selection_bias, shared_experts, routed_experts, k):
    probs = torch.softmax(x @ W_router, dim=-1)
    indices = (probs + selection_bias).topk(k, dim=-1).indices
    chosen = probs.gather(-1, indices)
    return _with_gates(x, chosen / chosen.sum(-1, keepdim=True), indices, shared_experts, routed_experts)


@bank.mistake(
    "bias in the gates",
    "the bias only decides which experts are chosen: the gates are the chosen affinities without it, over their sum",
)
def _bias_in_gates(x, W_router, selection_bias, shared_experts, routed_experts, k):
    top, indices = (torch.sigmoid(x @ W_router) + selection_bias).topk(k, dim=-1)
    return _with_gates(x, top / top.sum(-1, keepdim=True), indices, shared_experts, routed_experts)


@bank.mistake(
    "bias ignored", "choose the k experts by affinity + selection_bias: the bias is how DeepSeek-V3 balances the load"
)
def _bias_ignored(x, W_router, selection_bias, shared_experts, routed_experts, k):
    return _deepseek_moe(x, W_router, None, shared_experts, routed_experts, k)


@bank.mistake(
    "shared experts left out", "every token also goes through every shared expert, with no router and no gate"
)
def _no_shared(x, W_router, selection_bias, shared_experts, routed_experts, k):
    return _deepseek_moe(x, W_router, selection_bias, [], routed_experts, k)


@bank.mistake(
    "gates not normalised", "divide the chosen affinities by their sum: sigmoids do not add up to 1 on their own"
)
def _not_normalised(x, W_router, selection_bias, shared_experts, routed_experts, k):
    affinity = torch.sigmoid(x @ W_router)
    indices = (affinity + selection_bias).topk(k, dim=-1).indices
    return _with_gates(x, affinity.gather(-1, indices), indices, shared_experts, routed_experts)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("the course's router, then a loop over tokens")
def _alt_loop(x, W_router, selection_bias, shared_experts, routed_experts, k):
    gates, indices = deepseek_v3_gates(x @ W_router, k, selection_bias)
    shared = torch.stack([expert(x) for expert in shared_experts]).sum(0)
    return shared + dispatch_naive(x, indices, gates, routed_experts)


@bank.alternative("a dense combine matrix: every routed expert on every token")
def _alt_dense(x, W_router, selection_bias, shared_experts, routed_experts, k):
    affinity = torch.sigmoid(x @ W_router)  # (tokens, E)
    chosen = torch.zeros_like(affinity, dtype=torch.bool).scatter(-1, (affinity + selection_bias).topk(k).indices, True)
    weights = torch.where(chosen, affinity, torch.zeros_like(affinity))
    combine = weights / weights.sum(-1, keepdim=True)  # (tokens, E), k non-zero entries a row
    outputs = torch.stack([expert(x) for expert in list(routed_experts) + list(shared_experts)], dim=1)
    combine = torch.cat([combine, torch.ones(x.shape[0], len(shared_experts), dtype=combine.dtype)], dim=1)
    return torch.einsum("te,ted->td", combine, outputs)


@bank.alternative("float32, grouped by expert with index_add")
def _alt_float32(x, W_router, selection_bias, shared_experts, routed_experts, k):
    affinity = (x.float() @ W_router.float()).sigmoid()
    indices = torch.topk(affinity + selection_bias.float(), k).indices
    gates = affinity.gather(1, indices)
    gates = gates / gates.sum(1, keepdim=True)
    out = sum(expert(x).float() for expert in shared_experts)
    for e, expert in enumerate(routed_experts):
        token, slot = (indices == e).nonzero(as_tuple=True)
        out = out.index_add(0, token, gates[token, slot, None] * expert(x[token]).float())
    return out


DEEPSEEK_MOE = Exercise(
    name="deepseek_moe",
    reference=deepseek_moe,
    cases=_deepseek_cases,
    run=_run_no_grad,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two parts added together: the shared experts, applied to every token, and the routed ones, dispatched as "
        "in your earlier layer but with DeepSeek-V3's gates.",
        "For the gates, keep two tensors apart: the affinities (sigmoid of the logits) and the scores you choose by "
        "(affinities plus the bias). topk on the scores, then gather the affinities at those indices.",
    ],
    tolerance="float32",
)
EXERCISES = {DEEPSEEK_MOE.name: DEEPSEEK_MOE}


def check_deepseek_moe(fn):
    """Check a student's ``deepseek_moe(x, W_router, selection_bias, shared_experts, routed_experts, k)``."""
    return DEEPSEEK_MOE.check(fn)
