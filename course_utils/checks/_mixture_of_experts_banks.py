"""The banks of notebook 07's checks: typical mistakes and accepted alternatives for the top-k
router, dispatch and combine, and the load-balancing loss (the exercises are in
``checks/mixture_of_experts.py``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils import moe, moe_balancing


# -- the router -----------------------------------------------------------------------------------
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
    top, indices = torch.softmax(router_logits, dim=-1).topk(k, dim=-1)
    indices, order = indices.sort(dim=-1)  # experts by index, each gate kept with its expert
    return (top / top.sum(-1, keepdim=True)).gather(-1, order), indices


# -- dispatch and combine -----------------------------------------------------------------------
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
    out = torch.zeros(x.shape, dtype=torch.float32)
    for e, expert in enumerate(experts):
        token, slot = torch.where(indices == e)
        if token.numel():
            out.index_add_(0, token, gates[token, slot, None].float() * expert(x[token]).float())
    return out


# -- the load-balancing loss ------------------------------------------------------------------------
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
    counts = torch.zeros(E, dtype=probs.dtype).scatter_add_(
        0, indices.reshape(-1), torch.ones(T * k, dtype=probs.dtype)
    )
    return alpha * E * torch.einsum("e,te->", counts / (T * k), probs) / T
