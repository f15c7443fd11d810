"""Exercise ``moe_forward(x, W_router, W_gate, W_in, W_out, k)``: a whole mixture-of-experts layer.

Required form (stated in the notebook): x (batch, pos, d_model); W_router (d_model, n_experts); the
experts' SwiGLU weights stacked, W_gate and W_in (n_experts, d_model, d_mlp), W_out (n_experts, d_mlp,
d_model); return (batch, pos, d_model): router logits, softmax over all experts, the k most probable,
their probabilities renormalised to sum to 1, each token through its k experts
(silu(x W_gate[e]) ⊙ x W_in[e]) W_out[e], gate-weighted and summed, no residual. Checked against the
course's ``moe.MoE`` holding the same weights (and, in ``tests/test_moe.py``, against
``transformers``' ``MixtralSparseMoeBlock``). The check runs under ``torch.no_grad``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.moe import layer as moe
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mixture_of_experts._cases import F64


def moe_forward(x, W_router, W_gate, W_in, W_out, k):
    """Reference: the course's ``moe.MoE`` (grouped dispatch) holding these weights, applied to x."""
    n_experts, d_model, d_mlp = W_gate.shape
    layer = moe.MoE(d_model, d_mlp, n_experts, k, init_std=0.0).to(x.dtype)
    with torch.no_grad():
        for name, weight in (("W_router", W_router), ("W_gate", W_gate), ("W_in", W_in), ("W_out", W_out)):
            getattr(layer, name).copy_(weight)
        return layer(x)


def _moe_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, batch, pos, d_model, d_mlp, n_experts, k in (
        ("2 sequences of 6 tokens, d_model 8, 4 experts, k=2", 2, 6, 8, 12, 4, 2),
        ("1 sequence of 10 tokens, d_model 6, 6 experts, k=3 (expert 5 never chosen)", 1, 10, 6, 8, 6, 3),
        ("3 sequences of 4 tokens, d_model 4, d_mlp 3 < 5 experts, k=1", 3, 4, 4, 3, 5, 1),
    ):
        x = torch.randn(batch, pos, d_model, generator=gen, dtype=F64)
        W_router = torch.randn(d_model, n_experts, generator=gen, dtype=F64)
        if n_experts == 6:  # an idle expert: a loop over experts must cope with an empty group
            x[..., 0] = x[..., 0].abs() + 1.0
            W_router[0, -1] = -50.0
        W_gate, W_in = (torch.randn(n_experts, d_model, d_mlp, generator=gen, dtype=F64) * 0.5 for _ in range(2))
        W_out = torch.randn(n_experts, d_mlp, d_model, generator=gen, dtype=F64) * 0.5
        cases.append(Case(label, (x, W_router, W_gate, W_in, W_out, k)))
    return cases


def _run_no_grad(impl, case: Case):
    with torch.no_grad():
        return impl(*case.args, **case.kwargs)


def _combine(x, indices, gates, W_gate, W_in, W_out, silu_on_gate=True):
    """Each token's gate-weighted sum over its chosen experts, one (token, slot) at a time; (tokens, d_model)."""
    out = torch.zeros_like(x)
    for slot in range(indices.shape[1]):
        e = indices[:, slot]  # (tokens,) the expert of this slot
        a, b = torch.einsum("td,tdm->tm", x, W_gate[e]), torch.einsum("td,tdm->tm", x, W_in[e])
        hidden = F.silu(a) * b if silu_on_gate else a * F.silu(b)
        out = out + gates[:, slot, None] * torch.einsum("tm,tmd->td", hidden, W_out[e])
    return out


def _layer(gating, x, W_router, W_gate, W_in, W_out, k, silu_on_gate=True):
    """A layer with the router replaced by ``gating(logits, k) -> (gates, indices)``."""
    tokens = x.reshape(-1, x.shape[-1])  # (batch * pos, d_model)
    gates, indices = gating(tokens @ W_router, k)
    return _combine(tokens, indices, gates, W_gate, W_in, W_out, silu_on_gate).reshape(x.shape)


def _renormalised(logits, k):
    top, indices = torch.softmax(logits, dim=-1).topk(k, dim=-1)
    return top / top.sum(-1, keepdim=True), indices


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "gates not renormalised",
    "the k chosen probabilities must be divided by their sum (softmax over all experts, then renormalise the "
    "top k) so that each token's gates add up to 1",
)
def _not_renormalised(x, W_router, W_gate, W_in, W_out, k):
    return _layer(lambda logits, k: torch.softmax(logits, -1).topk(k, dim=-1), x, W_router, W_gate, W_in, W_out, k)


@bank.mistake("gates ignored", "weight each expert's output by its gate before adding it to the token's row")
def _unweighted(x, W_router, W_gate, W_in, W_out, k):
    def ones(logits, k):
        return torch.ones(logits.shape[0], k, dtype=logits.dtype), logits.topk(k, dim=-1).indices

    return _layer(ones, x, W_router, W_gate, W_in, W_out, k)


@bank.mistake(
    "softmax over the tokens", "the router's softmax runs over the experts of each token (dim=-1), not over the tokens"
)
def _softmax_over_tokens(x, W_router, W_gate, W_in, W_out, k):
    def over_tokens(logits, k):
        top, indices = torch.softmax(logits, dim=0).topk(k, dim=-1)
        return top / top.sum(-1, keepdim=True), indices

    return _layer(over_tokens, x, W_router, W_gate, W_in, W_out, k)


@bank.mistake(
    "silu on the wrong branch",
    "a SwiGLU expert applies silu to x @ W_gate and multiplies by x @ W_in (not the other way round)",
)
def _silu_wrong_branch(x, W_router, W_gate, W_in, W_out, k):
    return _layer(_renormalised, x, W_router, W_gate, W_in, W_out, k, silu_on_gate=False)


@bank.mistake("first choice only", "each token goes through all k of its chosen experts, not only the first")
def _first_only(x, W_router, W_gate, W_in, W_out, k):
    def first(logits, k):
        gates, indices = _renormalised(logits, k)
        return gates[:, :1], indices[:, :1]

    return _layer(first, x, W_router, W_gate, W_in, W_out, k)


@bank.mistake(
    "residual added", "return only the weighted sum of the experts' outputs: the residual x is added outside the layer"
)
def _with_residual(x, W_router, W_gate, W_in, W_out, k):
    return x + _layer(_renormalised, x, W_router, W_gate, W_in, W_out, k)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("Mixtral's router (softmax over the top-k logits), grouped by expert with index_add_")
def _alt_mixtral_grouped(x, W_router, W_gate, W_in, W_out, k):
    tokens = x.reshape(-1, x.shape[-1])  # (T, d_model)
    top_logits, indices = (tokens @ W_router).topk(k, dim=-1)
    gates = top_logits.softmax(dim=-1)  # (T, k)
    out = torch.zeros_like(tokens)
    for e in range(W_gate.shape[0]):
        token, slot = torch.where(indices == e)
        if token.numel():
            rows = tokens[token]
            y = (F.silu(rows @ W_gate[e]) * (rows @ W_in[e])) @ W_out[e]
            out.index_add_(0, token, gates[token, slot, None] * y)
    return out.reshape(x.shape)


@bank.alternative("every expert on every token, a dense combine matrix")
def _alt_dense(x, W_router, W_gate, W_in, W_out, k):
    probs = torch.softmax(torch.einsum("bpd,de->bpe", x, W_router), dim=-1)  # (batch, pos, E)
    top, indices = probs.topk(k, dim=-1)
    combine = torch.zeros_like(probs).scatter(-1, indices, top / top.sum(-1, keepdim=True))  # (batch, pos, E)
    hidden = F.silu(torch.einsum("bpd,edm->bpem", x, W_gate)) * torch.einsum("bpd,edm->bpem", x, W_in)
    return torch.einsum("bpe,bpem,emd->bpd", combine, hidden, W_out)


@bank.alternative("float32, a loop over tokens")
def _alt_float32_loop(x, W_router, W_gate, W_in, W_out, k):
    x, W_router, W_gate, W_in, W_out = (t.float() for t in (x, W_router, W_gate, W_in, W_out))
    flat = x.reshape(-1, x.shape[-1])
    rows = []
    for t in flat:
        probs = torch.softmax(t @ W_router, dim=0)
        top, chosen = torch.topk(probs, k)
        experts = [(F.silu(t @ W_gate[e]) * (t @ W_in[e])) @ W_out[e] for e in chosen]  # k vectors (d_model,)
        rows.append(sum(g / top.sum() * y for g, y in zip(top, experts)))
    return torch.stack(rows).reshape(x.shape)


MOE_FORWARD = Exercise(
    name="moe_forward",
    reference=moe_forward,
    cases=_moe_cases,
    run=_run_no_grad,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Flatten (batch, pos) into tokens first. Then the router of the first exercise on tokens @ W_router, and "
        "the grouped dispatch of the second, except that expert e is now the weights W_gate[e], W_in[e], W_out[e].",
        "For each expert e, the (token, slot) pairs where the chosen indices equal e: gather those tokens' rows, "
        "apply the SwiGLU with the e-th slices of the three weight tensors, multiply by the matching gates, "
        "index_add_ the result into the output rows, and reshape back to x's shape at the end.",
    ],
    tolerance="float32",
)
EXERCISES = {MOE_FORWARD.name: MOE_FORWARD}


def check_moe_forward(fn):
    """Check a student's ``moe_forward(x, W_router, W_gate, W_in, W_out, k)``."""
    return MOE_FORWARD.check(fn)
