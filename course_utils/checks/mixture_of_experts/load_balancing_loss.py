"""Exercise ``load_balancing_loss(router_logits, k, alpha=0.01)``: the Switch Transformer's auxiliary loss.

Required form (stated in the notebook): ``α · E · Σᵢ fᵢ · Pᵢ``, with fᵢ the share of the T·k
assignments that went to expert i and Pᵢ the router's full softmax probability for i averaged over
the tokens. The check also follows the gradient back to the router logits (in the student's kernel
when graded), so a loss that never reaches the router fails even when its value is right.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.moe import balancing as moe_balancing
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mixture_of_experts._cases import random_logits


def load_balancing_loss(router_logits: torch.Tensor, k: int, alpha: float = 0.01) -> torch.Tensor:
    """Reference: α · E · Σᵢ fᵢ · Pᵢ with fᵢ over the T·k assignments and Pᵢ over all E probabilities."""
    return moe_balancing.load_balancing_loss(router_logits, k, alpha)


def _loss_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    skewed = random_logits(gen, 40, 6)
    skewed[:, 0] += 2.0
    even, few = random_logits(gen, 32, 8), random_logits(gen, 24, 4)
    idle_last = random_logits(gen, 30, 5)
    idle_last[:, -1] -= 10.0  # the last expert is never in a token's top 3: its count is 0 (bincount needs minlength)
    return [
        Case("32 tokens, 8 experts, k=2, alpha=0.01", (even, 2, 0.01)),
        Case("40 tokens, 6 experts (expert 0 popular), k=2, alpha=1", (skewed, 2, 1.0)),
        Case("24 tokens, 4 experts, k=1, alpha=0.1", (few, 1, 0.1)),
        Case("30 tokens, 5 experts (expert 4 never chosen), k=3, alpha=0.5", (idle_last, 3, 0.5)),
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
    """(probabilities, chosen experts, how often each expert was chosen), as most mistakes compute them."""
    probs = torch.softmax(router_logits, dim=-1)
    indices = probs.topk(k, dim=-1).indices
    counts = F.one_hot(indices, router_logits.shape[-1]).sum(dim=(0, 1)).to(probs.dtype)
    return probs, indices, counts


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "P from the top-k gates",
    "Pᵢ must average the router's softmax over all E experts, not the renormalised top-k gates",
)
def _P_from_top_k_gates(router_logits, k, alpha=0.01):
    probs, indices, counts = _parts(router_logits, k)
    T, E = router_logits.shape
    gates = probs.gather(-1, indices)
    gates = gates / gates.sum(-1, keepdim=True)
    P = torch.zeros_like(probs).scatter(-1, indices, gates).mean(0)
    return alpha * E * (counts / (T * k) * P).sum()


@bank.mistake(
    "P from the top-k probabilities",
    "Pᵢ averages every expert's probability on every token, including the experts a token did not choose",
)
def _P_from_top_k_probs(router_logits, k, alpha=0.01):
    probs, indices, counts = _parts(router_logits, k)
    T, E = router_logits.shape
    P = torch.zeros_like(probs).scatter(-1, indices, probs.gather(-1, indices)).mean(0)
    return alpha * E * (counts / (T * k) * P).sum()


@bank.mistake(
    "fᵢ without k",
    "your fᵢ add up to k: divide the counts by T·k, the number of assignments, so that they add up to 1",
)
def _f_without_k(router_logits, k, alpha=0.01):
    probs, _, counts = _parts(router_logits, k)
    T, E = router_logits.shape
    return alpha * E * (counts / T * probs.mean(0)).sum()


@bank.mistake(
    "detached from the router",
    "the value is right but no gradient reaches the router logits: do not .detach(), .item() or "
    "rebuild the probabilities from NumPy",
)
def _detached(router_logits, k, alpha=0.01):
    return moe_balancing.load_balancing_loss(router_logits.detach(), k, alpha)


@bank.mistake("fᵢ from the first choice only", "fᵢ counts all k choices of every token, not just its first one")
def _f_first_choice_only(router_logits, k, alpha=0.01):
    probs = torch.softmax(router_logits, dim=-1)
    T, E = router_logits.shape
    f = torch.bincount(probs.argmax(-1), minlength=E).to(probs.dtype) / T
    return alpha * E * (f * probs.mean(0)).sum()


@bank.mistake("no factor E", "multiply by the number of experts E, so that perfectly even routing gives exactly α")
def _no_E(router_logits, k, alpha=0.01):
    return moe_balancing.load_balancing_loss(router_logits, k, alpha) / router_logits.shape[-1]


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("bincount and dot")
def _alt_bincount(router_logits, k, alpha=0.01):
    T, E = router_logits.shape
    probs = router_logits.softmax(-1)
    f = torch.bincount(probs.topk(k).indices.flatten(), minlength=E) / (T * k)
    return alpha * E * torch.dot(f.to(probs.dtype), probs.mean(0))


@bank.alternative("float32 with histc")
def _alt_float32_histc(router_logits, k, alpha=0.01):
    T, E = router_logits.shape
    probs = torch.softmax(router_logits.float(), dim=-1)
    chosen = torch.topk(router_logits, k, dim=-1).indices.float()
    f = torch.histc(chosen, bins=E, min=0, max=E) / (T * k)
    return E * alpha * (f * probs.sum(0) / T).sum()


@bank.alternative("log_softmax, scatter_add_ and einsum")
def _alt_log_softmax_scatter(router_logits, k, alpha=0.01):
    T, E = router_logits.shape
    probs = torch.log_softmax(router_logits, dim=-1).exp()
    indices = router_logits.topk(k, dim=-1).indices
    counts = torch.zeros(E, dtype=probs.dtype).scatter_add_(
        0, indices.reshape(-1), torch.ones(T * k, dtype=probs.dtype)
    )
    return alpha * E * torch.einsum("e,te->", counts / (T * k), probs) / T


LOAD_BALANCING_LOSS = Exercise(
    name="load_balancing_loss",
    reference=load_balancing_loss,
    cases=_loss_cases,
    run=_run_with_gradient,
    run_in_kernel=True,  # the gradient is taken from the student's own graph
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two vectors of length E: f from the experts each token chose (counted over all T·k choices), P from "
        "the full softmax averaged over tokens. The loss is alpha · E · (their dot product).",
        "Only P can carry a gradient (counting is not differentiable), so P must come straight from "
        "router_logits without leaving autograd.",
    ],
    tolerance="float32",
)
EXERCISES = {LOAD_BALANCING_LOSS.name: LOAD_BALANCING_LOSS}


def check_load_balancing_loss(fn):
    """Check a student's ``load_balancing_loss(router_logits, k, alpha)``."""
    return LOAD_BALANCING_LOSS.check(fn)
