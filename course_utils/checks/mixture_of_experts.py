"""Checks for notebook 07 (mixture of experts): the top-k router, dispatch and combine, and the
Switch load-balancing loss (whose check also follows the gradient back to the router logits, so a
loss that never reaches the router fails even when its value is right)."""

from __future__ import annotations

import torch

from course_utils import moe, moe_balancing
from course_utils.checks.compare import describe_mismatch
from course_utils.checks._mixture_of_experts_banks import (
    _alt_ascending_order,
    _alt_bincount,
    _alt_dense_combine_matrix,
    _alt_float32,
    _alt_float32_histc,
    _alt_log_softmax_scatter,
    _alt_masked_float32,
    _alt_masks_in_place,
    _alt_mixtral,
    _alt_per_token_loop,
    _alt_sort,
    _detached,
    _f_first_choice_only,
    _f_without_k,
    _first_choice_only,
    _first_gate_for_every_slot,
    _no_E,
    _no_renormalisation,
    _overwrites,
    _P_from_top_k_gates,
    _P_from_top_k_probs,
    _raw_logits_as_gates,
    _renormalise_over_all,
    _smallest_k,
    _softmax_over_tokens,
    _unweighted,
    _with_residual,
)
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
    if not (
        isinstance(result, (tuple, list)) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)
    ):
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


TOP_K_ROUTER = Exercise(
    name="top_k_router",
    reference=top_k_router,
    cases=_router_cases,
    compare=_compare_routes,
    mistakes=[
        Mistake(
            "no renormalisation",
            _no_renormalisation,
            "the k kept probabilities do not sum to 1: divide them by their own sum",
        ),
        Mistake(
            "raw logits as gates",
            _raw_logits_as_gates,
            "your gates are raw logits: turn them into probabilities (softmax) before using them as weights",
        ),
        Mistake(
            "softmax over tokens",
            _softmax_over_tokens,
            "the softmax ran over the tokens axis: each token's probabilities are over the experts (dim=-1)",
        ),
        Mistake(
            "smallest k",
            _smallest_k,
            "you picked the k least likely experts: the router keeps the k largest probabilities",
        ),
        Mistake(
            "softmax of probabilities",
            _renormalise_over_all,
            "a softmax of probabilities is not a renormalisation: divide the kept probabilities by their sum "
            "(or softmax the kept logits)",
        ),
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
    for label, tokens, d_model, n_experts, k in (
        ("12 tokens, 4 experts, k=2", 12, 6, 4, 2),
        ("30 tokens, 6 experts, k=2", 30, 8, 6, 2),
        ("10 tokens, 5 experts, k=3", 10, 4, 5, 3),
    ):
        torch.manual_seed(seed * 1000 + tokens)
        experts = [moe.SwiGLU(d_model, 2 * d_model, init_std=0.5).double() for _ in range(n_experts)]
        gates, indices = moe.top_k_gates(_logits(gen, tokens, n_experts), k)
        x = torch.randn(tokens, d_model, generator=gen, dtype=F64)
        cases.append(Case(label, (x, indices, gates, experts)))
    return cases


def _run_no_grad(impl, case: Case):
    with torch.no_grad():
        return impl(*case.args, **case.kwargs)


DISPATCH_AND_COMBINE = Exercise(
    name="dispatch_and_combine",
    reference=dispatch_and_combine,
    cases=_dispatch_cases,
    run=_run_no_grad,
    mistakes=[
        Mistake(
            "gates ignored",
            _unweighted,
            "each expert's output must be multiplied by its gate before it is added to the token's row",
        ),
        Mistake(
            "first choice only",
            _first_choice_only,
            "only the first expert of each token was used: a token goes through all k of its chosen experts",
        ),
        Mistake(
            "overwrite instead of add",
            _overwrites,
            "a token's second expert overwrote its first: accumulate (+=, index_add_ or index_put_ with "
            "accumulate=True) instead of assigning",
        ),
        Mistake(
            "first gate for every slot",
            _first_gate_for_every_slot,
            "every slot used the first gate: slot j of token t is weighted by gates[t, j]",
        ),
        Mistake(
            "residual added",
            _with_residual,
            "return only the weighted sum of the experts' outputs: the residual x is added outside the layer",
        ),
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


LOAD_BALANCING_LOSS = Exercise(
    name="load_balancing_loss",
    reference=load_balancing_loss,
    cases=_loss_cases,
    run=_run_with_gradient,
    run_in_kernel=True,  # the gradient is taken from the student's own graph
    mistakes=[
        Mistake(
            "P from the top-k gates",
            _P_from_top_k_gates,
            "Pᵢ must average the router's softmax over all E experts, not the renormalised top-k gates",
        ),
        Mistake(
            "P from the top-k probabilities",
            _P_from_top_k_probs,
            "Pᵢ averages every expert's probability on every token, including the experts a token did not choose",
        ),
        Mistake(
            "fᵢ without k",
            _f_without_k,
            "your fᵢ add up to k: divide the counts by T·k, the number of assignments, so that they add up to 1",
        ),
        Mistake(
            "detached from the router",
            _detached,
            "the value is right but no gradient reaches the router logits: do not .detach(), .item() or "
            "rebuild the probabilities from NumPy",
        ),
        Mistake(
            "fᵢ from the first choice only",
            _f_first_choice_only,
            "fᵢ counts all k choices of every token, not just its first one",
        ),
        Mistake(
            "no factor E", _no_E, "multiply by the number of experts E, so that perfectly even routing gives exactly α"
        ),
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
