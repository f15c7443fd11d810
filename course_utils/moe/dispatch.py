"""Running the chosen experts: every token's gate-weighted sum of its k experts' outputs, three ways.

Covers ``dispatch_naive`` (the readable reference: a Python loop over tokens), ``dispatch_grouped``
(what is used in practice: assignments sorted by expert, each expert run once on its group, outputs
added back with ``index_add_``; the only loop is over the E experts) and ``dispatch_dense`` (every
expert on every token in a few batched matmuls, then a combine matrix picks: E/k times the FLOPs,
faster for tiny experts on a CPU). All three give the same result (tested); an assignment an expert
dropped for capacity (``kept`` False) adds nothing.
Leaves out the router (``moe_routing``), expert parallelism and fused grouped matmuls.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float, Int
from torch import Tensor

Expert = Callable[[Tensor], Tensor]


def dispatch_naive(
    x: Float[Tensor, "tokens d_model"],
    indices: Int[Tensor, "tokens k"],
    gates: Float[Tensor, "tokens k"],
    experts: Sequence[Expert],
    kept: Bool[Tensor, "tokens k"] | None = None,
) -> Float[Tensor, "tokens d_model"]:
    """The readable reference: for every token, the gate-weighted sum of its k experts' outputs.

    A Python loop over tokens (slow; for checking ``dispatch_grouped`` only). Dropped assignments
    (``kept`` False) add nothing, so a token whose every assignment overflowed gets zeros.
    """
    rows = []
    for t in range(x.shape[0]):
        row = torch.zeros_like(x[t])
        for slot in range(indices.shape[1]):
            if kept is None or kept[t, slot]:
                row = row + gates[t, slot] * experts[int(indices[t, slot])](x[t : t + 1])[0]
        rows.append(row)
    return torch.stack(rows) if rows else torch.zeros_like(x)


def dispatch_grouped(
    x: Float[Tensor, "tokens d_model"],
    indices: Int[Tensor, "tokens k"],
    gates: Float[Tensor, "tokens k"],
    experts: Sequence[Expert],
    kept: Bool[Tensor, "tokens k"] | None = None,
) -> Float[Tensor, "tokens d_model"]:
    """Same result as ``dispatch_naive``, grouped by expert: sort, gather, run each expert once, add back.

    The (token, slot) assignments are flattened and sorted by expert; expert e receives one
    contiguous block of rows (``index_select``), and its gate-weighted outputs are summed into
    their tokens' rows with ``index_add_``. The only Python loop is over the E experts.
    """
    n_tokens, k = indices.shape
    flat_expert = indices.reshape(-1)  # (tokens * k,)
    flat_token = torch.arange(n_tokens, device=x.device).repeat_interleave(k)  # token of each assignment
    flat_gate = gates.reshape(-1)
    if kept is not None:
        keep = kept.reshape(-1)
        flat_expert, flat_token, flat_gate = flat_expert[keep], flat_token[keep], flat_gate[keep]
    order = torch.argsort(flat_expert, stable=True)  # group the assignments expert by expert
    sorted_tokens = flat_token[order]
    sizes = torch.bincount(flat_expert, minlength=len(experts)).tolist()  # rows per expert
    out = torch.zeros(x.shape, dtype=torch.result_type(x, gates), device=x.device)
    for e, (tokens_e, gates_e) in enumerate(zip(sorted_tokens.split(sizes), flat_gate[order].split(sizes))):
        if tokens_e.numel():
            y = experts[e](x.index_select(0, tokens_e))  # (n_e, d_model)
            out.index_add_(0, tokens_e, gates_e[:, None] * y)
    return out.to(x.dtype)



def dispatch_dense(
    x: Float[Tensor, "tokens d_model"],
    indices: Int[Tensor, "tokens k"],
    gates: Float[Tensor, "tokens k"],
    W_gate: Float[Tensor, "n_experts d_model d_mlp"],
    W_in: Float[Tensor, "n_experts d_model d_mlp"],
    W_out: Float[Tensor, "n_experts d_mlp d_model"],
    kept: Bool[Tensor, "tokens k"] | None = None,
) -> Float[Tensor, "tokens d_model"]:
    """Every expert on every token, then a (tokens, n_experts) combine matrix picks and weights them.

    E/k times the FLOPs of ``dispatch_grouped`` but a handful of batched matmuls: faster for tiny
    experts on a CPU (the toy experiment trains this way), wasteful for real ones. Same result.
    """
    weights = gates if kept is None else gates * kept  # dropped assignments weigh 0
    combine = torch.zeros(x.shape[0], W_gate.shape[0], dtype=weights.dtype, device=x.device)
    combine = combine.scatter_add(1, indices, weights)  # (tokens, n_experts)
    n_experts, d_model, d_mlp = W_gate.shape

    def as_one(W):  # (E, d_model, d_mlp) -> (d_model, E * d_mlp)
        return W.permute(1, 0, 2).reshape(d_model, n_experts * d_mlp)

    hidden = F.silu(x @ as_one(W_gate)) * (x @ as_one(W_in))  # (tokens, E * d_mlp): every expert at once
    hidden = hidden.reshape(-1, n_experts, d_mlp) * combine.to(x.dtype)[:, :, None]  # (tokens, E, d_mlp), weighted
    return hidden.reshape(-1, n_experts * d_mlp) @ W_out.reshape(n_experts * d_mlp, d_model)  # (tokens, d_model)
