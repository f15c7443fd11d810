"""Checks for notebook 07 (mixture of experts): the top-k router, dispatch and combine, and the
Switch load-balancing loss (whose check also follows the gradient back to the router logits, so a
loss that never reaches the router fails even when its value is right)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils import moe, moe_balancing
from course_utils.checks.compare import describe_mismatch
from course_utils.checks.core import Alternative, Case, Exercise, Mistake
from course_utils.tolerances import teaching_tolerance

F64 = torch.float64


def _logits(gen: torch.Generator, tokens: int, n_experts: int) -> torch.Tensor:
    return torch.randn(tokens, n_experts, generator=gen, dtype=F64) * 1.5


# -- the router -----------------------------------------------------------------------------------
def top_k_router(router_logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference: (gates, indices), both (tokens, k); gates renormalised to sum to 1 per token."""
    return moe.top_k_gates(router_logits, k)


def _router_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("8 tokens, 4 experts, k=2", (_logits(gen, 8, 4), 2)),
        Case("20 tokens, 8 experts, k=2", (_logits(gen, 20, 8), 2)),
        Case("6 tokens, 5 experts, k=3", (_logits(gen, 6, 5), 3)),
        Case("5 tokens, 3 experts, k=1", (_logits(gen, 5, 3), 1)),
    ]


def _by_expert(result):
    """(gates, indices) with each row put in increasing expert order, so any order of the k passes."""
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)):
        return result
    gates, indices = result
    if gates.shape != indices.shape or indices.is_floating_point():
        return result
    indices, order = indices.long().sort(dim=-1)
    return gates.gather(-1, order), indices


def _compare_routes(expected, got) -> str | None:
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        return f"expected a pair (gates, indices), got {type(got).__name__}"
    return describe_mismatch(_by_expert(expected), _by_expert(tuple(got)), tol=teaching_tolerance("float32"))


def _no_renormalisation(router_logits, k):
    return torch.softmax(router_logits, dim=-1).topk(k, dim=-1)


def _raw_logits_as_gates(router_logits, k):
    return router_logits.topk(k, dim=-1)


def _softmax_over_tokens(router_logits, k):
    top, indices = torch.softmax(router_logits, dim=0).topk(k, dim=-1)
    return top / top.sum(-1, keepdim=True), indices


def _smallest_k(router_logits, k):
    top, indices = torch.softmax(router_logits, dim=-1).topk(k, dim=-1, largest=False)
    return top / top.sum(-1, keepdim=True), indices


def _renormalise_over_all(router_logits, k):
    probs = torch.softmax(router_logits, dim=-1)
    top, indices = probs.topk(k, dim=-1)
    return torch.softmax(top, dim=-1), indices  # a second softmax of probabilities, not of logits


def _alt_mixtral(router_logits, k):
    top, indices = router_logits.topk(k, dim=-1)
    return torch.softmax(top, dim=-1), indices


def _alt_sort(router_logits, k):
    order = torch.argsort(router_logits, dim=-1, descending=True)[:, :k]
    weights = router_logits.exp().gather(-1, order)
    return weights / weights.sum(-1, keepdim=True), order


def _alt_masked_float32(router_logits, k):
    logits = router_logits.float()
    indices = logits.topk(k, dim=-1).indices
    masked = torch.full_like(logits, float("-inf")).scatter(-1, indices, logits.gather(-1, indices))
    return torch.softmax(masked, dim=-1).gather(-1, indices), indices


def _alt_ascending_order(router_logits, k):
    gates, indices = moe.top_k_gates(router_logits, k)
    indices, order = indices.sort(dim=-1)
    return gates.gather(-1, order), indices


TOP_K_ROUTER = Exercise(
    name="top_k_router",
    reference=top_k_router,
    cases=_router_cases,
    compare=_compare_routes,
    mistakes=[
        Mistake("no renormalisation", _no_renormalisation,
                "the k kept probabilities do not sum to 1: divide them by their own sum"),
        Mistake("raw logits as gates", _raw_logits_as_gates,
                "your gates are raw logits: turn them into probabilities (softmax) before using them as weights"),
        Mistake("softmax over tokens", _softmax_over_tokens,
                "the softmax ran over the tokens axis: each token's probabilities are over the experts (dim=-1)"),
        Mistake("smallest k", _smallest_k,
                "you picked the k least likely experts: the router keeps the k largest probabilities"),
        Mistake("softmax of probabilities", _renormalise_over_all,
                "a softmax of probabilities is not a renormalisation: divide the kept probabilities by their sum "
                "(or softmax the kept logits)"),
    ],
    alternatives=[
        Alternative("softmax over the top-k logits (Mixtral)", _alt_mixtral),
        Alternative("argsort and exp", _alt_sort),
        Alternative("masked softmax in float32", _alt_masked_float32),
        Alternative("experts in increasing index order", _alt_ascending_order),
    ],
    hints=[
        "Three steps: probabilities over the experts, the k largest of them, then rescale those k so they add up to 1.",
        "torch.topk returns both the values and the indices; the rescaling divides by a sum taken over the last axis "
        "with keepdim=True.",
    ],
    tolerance="float32",
)


# -- dispatch and combine -----------------------------------------------------------------------
def dispatch_and_combine(x: torch.Tensor, indices: torch.Tensor, gates: torch.Tensor, experts) -> torch.Tensor:
    """Reference: out[t] = Σ_slot gates[t, slot] · experts[indices[t, slot]](x[t])."""
    return moe.dispatch_grouped(x, indices, gates, experts)


def _dispatch_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, tokens, d_model, n_experts, k in (("12 tokens, 4 experts, k=2", 12, 6, 4, 2),
                                                ("30 tokens, 6 experts, k=2", 30, 8, 6, 2),
                                                ("10 tokens, 5 experts, k=3", 10, 4, 5, 3)):
        torch.manual_seed(seed * 1000 + tokens)
        experts = [moe.SwiGLU(d_model, 2 * d_model, init_std=0.5).double() for _ in range(n_experts)]
        gates, indices = moe.top_k_gates(_logits(gen, tokens, n_experts), k)
        x = torch.randn(tokens, d_model, generator=gen, dtype=F64)
        cases.append(Case(label, (x, indices, gates, experts)))
    return cases


def _run_no_grad(impl, case: Case):
    with torch.no_grad():
        return impl(*case.args, **case.kwargs)


def _unweighted(x, indices, gates, experts):
    return moe.dispatch_grouped(x, indices, torch.ones_like(gates), experts)


def _first_choice_only(x, indices, gates, experts):
    return moe.dispatch_grouped(x, indices[:, :1], gates[:, :1], experts)


def _overwrites(x, indices, gates, experts):
    out = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        token, slot = torch.where(indices == e)
        out[token] = gates[token, slot, None] * expert(x[token])  # = instead of +=
    return out


def _first_gate_for_every_slot(x, indices, gates, experts):
    return moe.dispatch_grouped(x, indices, gates[:, :1].expand_as(gates), experts)


def _with_residual(x, indices, gates, experts):
    return x + moe.dispatch_grouped(x, indices, gates, experts)


def _alt_per_token_loop(x, indices, gates, experts):
    return moe.dispatch_naive(x, indices, gates, experts)


def _alt_dense_combine_matrix(x, indices, gates, experts):
    combine = torch.zeros(x.shape[0], len(experts), dtype=gates.dtype).scatter_add(1, indices, gates)  # (tokens, E)
    all_outputs = torch.stack([expert(x) for expert in experts], dim=1)  # (tokens, E, d_model)
    return torch.einsum("te,ted->td", combine, all_outputs)


def _alt_masks_in_place(x, indices, gates, experts):
    out = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        token, slot = torch.nonzero(indices == e, as_tuple=True)
        if token.numel():
            out.index_put_((token,), gates[token, slot, None] * expert(x[token]), accumulate=True)
    return out


def _alt_float32(x, indices, gates, experts):
    return moe.dispatch_grouped(x.float(), indices, gates.float(), [lambda r, f=f: f(r.double()).float() for f in experts])


DISPATCH_AND_COMBINE = Exercise(
    name="dispatch_and_combine",
    reference=dispatch_and_combine,
    cases=_dispatch_cases,
    run=_run_no_grad,
    mistakes=[
        Mistake("gates ignored", _unweighted,
                "each expert's output must be multiplied by its gate before it is added to the token's row"),
        Mistake("first choice only", _first_choice_only,
                "only the first expert of each token was used: a token goes through all k of its chosen experts"),
        Mistake("overwrite instead of add", _overwrites,
                "a token's second expert overwrote its first: accumulate (+=, index_add_ or index_put_ with "
                "accumulate=True) instead of assigning"),
        Mistake("first gate for every slot", _first_gate_for_every_slot,
                "every slot used the first gate: slot j of token t is weighted by gates[t, j]"),
        Mistake("residual added", _with_residual,
                "return only the weighted sum of the experts' outputs: the residual x is added outside the layer"),
    ],
    alternatives=[
        Alternative("a loop over tokens", _alt_per_token_loop),
        Alternative("dense combine matrix and einsum", _alt_dense_combine_matrix),
        Alternative("masks and index_put_ with accumulate", _alt_masks_in_place),
        Alternative("float32", _alt_float32),
    ],
    hints=[
        "Work expert by expert: find which (token, slot) pairs chose expert e, run the expert once on those "
        "tokens' rows, and add the gate-weighted result back into those rows.",
        "torch.where(indices == e) gives the tokens and slots at once; with index_add_ along dim 0 a token that "
        "appears for two experts gets both contributions.",
    ],
    tolerance="float32",
)


# -- the load-balancing loss ------------------------------------------------------------------------
def load_balancing_loss(router_logits: torch.Tensor, k: int, alpha: float = 0.01) -> torch.Tensor:
    """Reference: α · E · Σᵢ fᵢ · Pᵢ with fᵢ over the T·k assignments and Pᵢ over all E probabilities."""
    return moe_balancing.load_balancing_loss(router_logits, k, alpha)


def _loss_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    skewed = _logits(gen, 40, 6)
    skewed[:, 0] += 2.0
    return [
        Case("32 tokens, 8 experts, k=2, alpha=0.01", (_logits(gen, 32, 8), 2, 0.01)),
        Case("40 tokens, 6 experts (expert 0 popular), k=2, alpha=1", (skewed, 2, 1.0)),
        Case("24 tokens, 4 experts, k=1, alpha=0.1", (_logits(gen, 24, 4), 1, 0.1)),
        Case("30 tokens, 5 experts, k=3, alpha=0.5", (_logits(gen, 30, 5), 3, 0.5)),
    ]


def _run_with_gradient(impl, case: Case):
    """(loss value, d loss / d router_logits): a loss cut off from the logits has a zero gradient."""
    logits, k, alpha = case.args
    logits = logits.detach().clone().requires_grad_(True)
    loss = impl(logits, k, alpha)
    if isinstance(loss, torch.Tensor) and loss.requires_grad and loss.numel() == 1:
        (grad,) = torch.autograd.grad(loss.reshape(()), logits, allow_unused=True)
        grad = torch.zeros_like(logits) if grad is None else grad
        value = loss.detach()
    else:
        grad = torch.zeros_like(logits.detach())
        value = loss.detach() if isinstance(loss, torch.Tensor) else loss
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = float(value.reshape(()))
    return value, grad


def _parts(router_logits, k):
    probs = torch.softmax(router_logits, dim=-1)
    indices = probs.topk(k, dim=-1).indices
    counts = F.one_hot(indices, router_logits.shape[-1]).sum(dim=(0, 1)).to(probs.dtype)
    return probs, indices, counts


def _P_from_top_k_gates(router_logits, k, alpha=0.01):
    probs, indices, counts = _parts(router_logits, k)
    T, E = router_logits.shape
    gates = probs.gather(-1, indices)
    gates = gates / gates.sum(-1, keepdim=True)
    P = torch.zeros_like(probs).scatter(-1, indices, gates).mean(0)
    return alpha * E * (counts / (T * k) * P).sum()


def _P_from_top_k_probs(router_logits, k, alpha=0.01):
    probs, indices, counts = _parts(router_logits, k)
    T, E = router_logits.shape
    P = torch.zeros_like(probs).scatter(-1, indices, probs.gather(-1, indices)).mean(0)
    return alpha * E * (counts / (T * k) * P).sum()


def _f_without_k(router_logits, k, alpha=0.01):
    probs, _, counts = _parts(router_logits, k)
    T, E = router_logits.shape
    return alpha * E * (counts / T * probs.mean(0)).sum()


def _detached(router_logits, k, alpha=0.01):
    return moe_balancing.load_balancing_loss(router_logits.detach(), k, alpha)


def _f_first_choice_only(router_logits, k, alpha=0.01):
    probs = torch.softmax(router_logits, dim=-1)
    T, E = router_logits.shape
    f = torch.bincount(probs.argmax(-1), minlength=E).to(probs.dtype) / T
    return alpha * E * (f * probs.mean(0)).sum()


def _no_E(router_logits, k, alpha=0.01):
    return moe_balancing.load_balancing_loss(router_logits, k, alpha) / router_logits.shape[-1]


def _alt_bincount(router_logits, k, alpha=0.01):
    T, E = router_logits.shape
    probs = router_logits.softmax(-1)
    f = torch.bincount(probs.topk(k).indices.flatten(), minlength=E) / (T * k)
    return alpha * E * torch.dot(f.to(probs.dtype), probs.mean(0))


def _alt_float32_histc(router_logits, k, alpha=0.01):
    T, E = router_logits.shape
    probs = torch.softmax(router_logits.float(), dim=-1)
    chosen = torch.topk(router_logits, k, dim=-1).indices.float()
    f = torch.histc(chosen, bins=E, min=0, max=E) / (T * k)
    return E * alpha * (f * probs.sum(0) / T).sum()


def _alt_log_softmax_scatter(router_logits, k, alpha=0.01):
    T, E = router_logits.shape
    probs = torch.log_softmax(router_logits, dim=-1).exp()
    indices = router_logits.topk(k, dim=-1).indices
    counts = torch.zeros(E, dtype=probs.dtype).scatter_add_(0, indices.reshape(-1), torch.ones(T * k, dtype=probs.dtype))
    return alpha * E * torch.einsum("e,te->", counts / (T * k), probs) / T


LOAD_BALANCING_LOSS = Exercise(
    name="load_balancing_loss",
    reference=load_balancing_loss,
    cases=_loss_cases,
    run=_run_with_gradient,
    mistakes=[
        Mistake("P from the top-k gates", _P_from_top_k_gates,
                "Pᵢ must average the router's softmax over all E experts, not the renormalised top-k gates"),
        Mistake("P from the top-k probabilities", _P_from_top_k_probs,
                "Pᵢ averages every expert's probability on every token, including the experts a token did not choose"),
        Mistake("fᵢ without k", _f_without_k,
                "your fᵢ add up to k: divide the counts by T·k, the number of assignments, so that they add up to 1"),
        Mistake("detached from the router", _detached,
                "the value is right but no gradient reaches the router logits: do not .detach(), .item() or "
                "rebuild the probabilities from NumPy"),
        Mistake("fᵢ from the first choice only", _f_first_choice_only,
                "fᵢ counts all k choices of every token, not just its first one"),
        Mistake("no factor E", _no_E,
                "multiply by the number of experts E, so that perfectly even routing gives exactly α"),
    ],
    alternatives=[
        Alternative("bincount and dot", _alt_bincount),
        Alternative("float32 with histc", _alt_float32_histc),
        Alternative("log_softmax, scatter_add_ and einsum", _alt_log_softmax_scatter),
    ],
    hints=[
        "Two vectors of length E: f from the experts each token chose (counted over all T·k choices), P from "
        "the full softmax averaged over tokens. The loss is alpha · E · (their dot product).",
        "Only P can carry a gradient (counting is not differentiable), so P must come straight from "
        "router_logits without leaving autograd.",
    ],
    tolerance="float32",
)

EXERCISES = {ex.name: ex for ex in (TOP_K_ROUTER, DISPATCH_AND_COMBINE, LOAD_BALANCING_LOSS)}


def check_top_k_router(fn):
    """Check a student's ``top_k_router(router_logits, k)``."""
    return TOP_K_ROUTER.check(fn)


def check_dispatch_and_combine(fn):
    """Check a student's ``dispatch_and_combine(x, indices, gates, experts)``."""
    return DISPATCH_AND_COMBINE.check(fn)


def check_load_balancing_loss(fn):
    """Check a student's ``load_balancing_loss(router_logits, k, alpha)``."""
    return LOAD_BALANCING_LOSS.check(fn)
