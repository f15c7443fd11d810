"""A mixture-of-experts layer: a router picks k of E SwiGLU experts for every token.

Covers the top-k router (softmax over all E experts, keep the k largest, renormalise them; and
Mixtral's equivalent form, a softmax over the k largest logits), a per-token loop dispatch as the
readable reference, the grouped dispatch used in practice (assignments sorted by expert, each
expert run once on its group, outputs added back with ``index_add_``; no Python loop over tokens),
an expert capacity with overflow assignments dropped and counted per expert, the ``MoE`` module,
and copying the weights of ``transformers``' ``MixtralSparseMoeBlock`` into it.
Load-balancing losses and the training experiment are in ``course_utils.moe_balancing``.
Leaves out expert parallelism, shared experts, router jitter noise and fused grouped matmuls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from course_utils.validate import (
    float_tensor,
    has_data,
    int_at_least,
    integer,
    non_negative_int,
    non_negative_number,
    number,
    one_of,
    positive_int,
)

Expert = Callable[[Tensor], Tensor]
DISPATCH = ("grouped", "dense")


# -- validation at the public boundary -----------------------------------------------------------
# Public functions check their arguments once, here; the layer checks its sizes when it is built and
# its input when it is called, then uses the unchecked ``_``-helpers below. The range messages are
# the module's own wording (notebook 07 prints them).
def check_experts_and_k(n_experts, k) -> tuple[int, int]:
    """``(n_experts, k)`` as ints, or a ValueError/TypeError naming the bad argument."""
    integer("n_experts", n_experts)  # both types first, then the ranges
    integer("k", k)
    int_at_least("n_experts", n_experts, 1)
    int_at_least("k", k, 1)
    if k > n_experts:
        raise ValueError(
            f"k must be at most n_experts={n_experts} (a token cannot pick more experts than exist), got k={k}"
        )
    return n_experts, k


def _check_no_nan(router_logits: Tensor) -> Tensor:
    if has_data(router_logits) and torch.isnan(router_logits).any():  # -inf is allowed: an expert switched off
        raise ValueError("router_logits contain NaN (check the router's input and weights for NaN or overflow)")
    return router_logits


def check_router_logits(router_logits) -> Tensor:
    """A (tokens, n_experts) floating tensor without NaN, or a ValueError/TypeError naming it."""
    float_tensor("router_logits", router_logits, "(tokens, n_experts)", min_dims=2, finite=False)
    if router_logits.ndim != 2:
        raise ValueError(f"router_logits must have shape (tokens, n_experts), got shape {tuple(router_logits.shape)}")
    return _check_no_nan(router_logits)


def check_capacity_factor(capacity_factor) -> float | None:
    """``None`` (no capacity limit) or a positive finite number."""
    if capacity_factor is None:
        return None
    value = number("capacity_factor", capacity_factor)
    if not 0 < value < math.inf:  # also False for NaN
        raise ValueError(f"capacity_factor must be a positive number (or None for no limit), got {capacity_factor}")
    return value


# -- the router ---------------------------------------------------------------------------------
def top_k_gates(
    router_logits: Float[Tensor, "tokens n_experts"], k: int, selection_bias: Float[Tensor, "n_experts"] | None = None
) -> tuple[Float[Tensor, "tokens k"], Int[Tensor, "tokens k"]]:
    """Softmax over all experts, keep the k most probable, renormalise the kept ones to sum to 1.

    ``top_k_gates(torch.tensor([[2., 1., 0.]]).log(), 2)`` -> gates ``[[2/3, 1/3]]``, indices ``[[0, 1]]``.
    Indices come in decreasing order of probability (``torch.topk``'s order). ``selection_bias``
    (DeepSeek-V3's balancing bias) is added to the scores for choosing the experts only; the gates
    stay the renormalised router probabilities.
    """
    router_logits = check_router_logits(router_logits)
    check_experts_and_k(router_logits.shape[-1], k)
    return _top_k_gates(torch.softmax(router_logits, dim=-1), k, selection_bias)


def _top_k_gates(probs: Tensor, k: int, selection_bias: Tensor | None) -> tuple[Tensor, Tensor]:
    """``top_k_gates`` on router probabilities (tokens, n_experts) already checked."""
    if selection_bias is None:
        top_probs, indices = probs.topk(k, dim=-1)  # (tokens, k) each
    else:
        indices = (probs + selection_bias.to(probs.dtype)).topk(k, dim=-1).indices
        top_probs = probs.gather(-1, indices)
    return top_probs / top_probs.sum(dim=-1, keepdim=True), indices


def top_k_gates_mixtral(
    router_logits: Float[Tensor, "tokens n_experts"], k: int
) -> tuple[Float[Tensor, "tokens k"], Int[Tensor, "tokens k"]]:
    """Mixtral's form: take the k largest logits, softmax over just those. Equal to ``top_k_gates``.

    ``top_k_gates_mixtral(torch.tensor([[2., 1., 0.]]).log(), 2)`` -> ``[[2/3, 1/3]]``, ``[[0, 1]]``.
    (softmax is monotone, so the same experts win; the common factor Σ exp over all cancels.)
    """
    router_logits = check_router_logits(router_logits)
    check_experts_and_k(router_logits.shape[-1], k)
    top_logits, indices = router_logits.topk(k, dim=-1)  # (tokens, k)
    return torch.softmax(top_logits, dim=-1), indices


# -- capacity -------------------------------------------------------------------------------------
def expert_capacity(n_tokens: int, n_experts: int, k: int, capacity_factor: float) -> int:
    """Slots per expert: ceil(capacity_factor · n_tokens · k / n_experts).
    ``expert_capacity(64, 8, 2, 1.25)`` -> ``20``."""
    non_negative_int("n_tokens", n_tokens)
    check_experts_and_k(n_experts, k)
    capacity_factor = check_capacity_factor(capacity_factor)
    if capacity_factor is None:
        raise ValueError("capacity_factor must be a positive number here, got None")
    return _expert_capacity(n_tokens, n_experts, k, capacity_factor)


def _expert_capacity(n_tokens: int, n_experts: int, k: int, capacity_factor: float) -> int:
    return math.ceil(capacity_factor * n_tokens * k / n_experts)


def capacity_mask(indices: Int[Tensor, "tokens k"], n_experts: int, capacity: int) -> Bool[Tensor, "tokens k"]:
    """Which assignments fit: each expert keeps its first ``capacity``, the rest overflow (dropped).

    Priority: every token's first choice before any second choice, then token order (as in GShard).
    ``capacity_mask(torch.tensor([[0], [0], [1]]), 2, 1)`` -> ``[[True], [False], [True]]``.
    """
    n_tokens, k = indices.shape
    by_rank = indices.T.reshape(-1)  # (k * tokens,) rank-major: all first choices, then all second
    one_hot = F.one_hot(by_rank, n_experts)  # (k * tokens, n_experts)
    position = (one_hot.cumsum(0) * one_hot).sum(-1) - 1  # 0-based slot of each assignment in its expert
    return (position < capacity).reshape(k, n_tokens).T  # (tokens, k)


# -- dispatch and combine -----------------------------------------------------------------------
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


# -- the experts and the layer ------------------------------------------------------------------
def swiglu(
    x: Float[Tensor, "... d_model"],
    W_gate: Float[Tensor, "d_model d_mlp"],
    W_in: Float[Tensor, "d_model d_mlp"],
    W_out: Float[Tensor, "d_mlp d_model"],
) -> Float[Tensor, "... d_model"]:
    """Mixtral's expert: (silu(x @ W_gate) * (x @ W_in)) @ W_out, no biases (Mixtral's w1, w3, w2).

    With ``W_gate = W_in = W_out = torch.eye(1)``: ``[[2.]]`` -> ``[[2 · silu(2)]] = [[3.5232]]``.
    """
    return (F.silu(x @ W_gate) * (x @ W_in)) @ W_out


class SwiGLU(nn.Module):
    """One SwiGLU expert as a module: ``SwiGLU(d_model=8, d_mlp=16)(torch.randn(3, 8))`` has shape (3, 8)."""

    def __init__(self, d_model: int, d_mlp: int, init_std: float = 0.02):
        super().__init__()
        self.W_gate = nn.Parameter(torch.randn(d_model, d_mlp) * init_std)
        self.W_in = nn.Parameter(torch.randn(d_model, d_mlp) * init_std)
        self.W_out = nn.Parameter(torch.randn(d_mlp, d_model) * init_std)

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        return swiglu(x, self.W_gate, self.W_in, self.W_out)


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


@dataclass
class Routing:
    """What the router decided for a batch of tokens (flattened to ``tokens = batch * pos``)."""

    logits: Float[Tensor, "tokens n_experts"]
    probs: Float[Tensor, "tokens n_experts"]
    indices: Int[Tensor, "tokens k"]
    gates: Float[Tensor, "tokens k"]
    kept: Bool[Tensor, "tokens k"]
    capacity: int | None

    def load(self) -> Int[Tensor, "n_experts"]:
        """Assignments each expert was asked to take (kept or dropped)."""
        return torch.bincount(self.indices.reshape(-1), minlength=self.probs.shape[-1])

    def dropped(self) -> Int[Tensor, "n_experts"]:
        """Assignments each expert had to drop because it was full."""
        return torch.bincount(self.indices[~self.kept], minlength=self.probs.shape[-1])


class MoE(nn.Module):
    """A mixture-of-experts feed-forward block: ``MoE(d_model=8, d_mlp=16, n_experts=4, k=2)(x)``.

    Maps (batch, pos, d_model) or (tokens, d_model) to the same shape. ``W_router`` is
    (d_model, n_experts); the experts' SwiGLU weights are stacked, ``W_gate``/``W_in`` of shape
    (n_experts, d_model, d_mlp) and ``W_out`` (n_experts, d_mlp, d_model), as transformers stores
    them. With ``capacity_factor`` set, each expert takes at most ``expert_capacity(tokens,
    n_experts, k, capacity_factor)`` assignments per call and drops the rest. ``selection_bias`` (a
    buffer, zeros by default) is DeepSeek-V3's balancing bias. ``dispatch`` is ``"grouped"`` or ``"dense"``.
    ``generator`` (a CPU ``torch.Generator``), if given, draws the initial weights instead of torch's
    global random state (the same numbers as ``torch.manual_seed`` with that seed).
    """

    def __init__(
        self,
        d_model: int,
        d_mlp: int,
        n_experts: int,
        k: int = 2,
        capacity_factor: float | None = None,
        init_std: float = 0.02,
        dispatch: str = "grouped",
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        positive_int("d_model", d_model)
        positive_int("d_mlp", d_mlp)
        one_of("dispatch", dispatch, DISPATCH)
        self.n_experts, self.k = check_experts_and_k(n_experts, k)
        self.d_model, self.d_mlp, self.dispatch = d_model, d_mlp, dispatch
        self.capacity_factor = check_capacity_factor(capacity_factor)
        init_std = non_negative_number("init_std", init_std)

        def draw(*shape):  # from ``generator`` if given, else from torch's global random state
            return torch.randn(*shape, generator=generator) * init_std

        self.W_router = nn.Parameter(draw(d_model, n_experts))
        self.W_gate = nn.Parameter(draw(n_experts, d_model, d_mlp))
        self.W_in = nn.Parameter(draw(n_experts, d_model, d_mlp))
        self.W_out = nn.Parameter(draw(n_experts, d_mlp, d_model))
        self.register_buffer("selection_bias", torch.zeros(n_experts))

    def expert(self, e: int) -> Expert:
        """Expert ``e`` as a function of its tokens' rows."""
        return lambda rows: swiglu(rows, self.W_gate[e], self.W_in[e], self.W_out[e])

    @property
    def experts(self) -> list[Expert]:
        return [self.expert(e) for e in range(self.n_experts)]

    def route(self, x: Float[Tensor, "tokens d_model"]) -> Routing:
        """Router logits, probabilities, the chosen experts, their gates and which assignments fit."""
        if not isinstance(x, Tensor) or x.ndim != 2 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have shape (tokens, d_model={self.d_model}), got {getattr(x, 'shape', type(x).__name__)}"
            )
        return self._route(x)

    def _route(self, x: Tensor) -> Routing:
        """``route`` on a (tokens, d_model) input already checked; the one value check is for NaN logits."""
        logits = _check_no_nan(x @ self.W_router)  # (tokens, n_experts)
        probs = torch.softmax(logits, dim=-1)
        gates, indices = _top_k_gates(probs, self.k, self.selection_bias)
        capacity = (
            None
            if self.capacity_factor is None
            else _expert_capacity(x.shape[0], self.n_experts, self.k, self.capacity_factor)
        )
        kept = (
            torch.ones_like(indices, dtype=torch.bool)
            if capacity is None
            else capacity_mask(indices, self.n_experts, capacity)
        )
        return Routing(logits, probs, indices, gates, kept, capacity)

    def forward_with_routing(self, x: Float[Tensor, "... d_model"]) -> tuple[Float[Tensor, "... d_model"], Routing]:
        if not isinstance(x, Tensor) or x.ndim not in (2, 3) or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have shape (batch, pos, d_model={self.d_model}) or (tokens, d_model={self.d_model}), "
                f"got {getattr(x, 'shape', type(x).__name__)}"
            )
        tokens = x.reshape(-1, self.d_model)  # (batch * pos, d_model)
        routing = self._route(tokens)
        kept = None if routing.capacity is None else routing.kept
        if self.dispatch == "dense":
            out = dispatch_dense(tokens, routing.indices, routing.gates, self.W_gate, self.W_in, self.W_out, kept)
        else:
            out = dispatch_grouped(tokens, routing.indices, routing.gates, self.experts, kept)
        return out.reshape(x.shape), routing

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        return self.forward_with_routing(x)[0]

    def active_parameters(self) -> int:
        """Parameters one token uses: the router and k experts."""
        return self.W_router.numel() + self.k * 3 * self.d_model * self.d_mlp


def load_mixtral_block(block) -> MoE:
    """A course ``MoE`` holding the weights of a ``transformers`` ``MixtralSparseMoeBlock``.

    transformers stores ``gate.weight`` as (n_experts, d_model), ``experts.gate_up_proj`` as
    (n_experts, 2·d_mlp, d_model) with the gate rows first, and ``experts.down_proj`` as
    (n_experts, d_model, d_mlp); the course layout is their transpose (x @ W).
    """
    if not hasattr(getattr(block, "experts", None), "gate_up_proj"):
        raise TypeError(
            "block must be a transformers MixtralSparseMoeBlock with stacked experts (transformers >= 5; "
            f"older versions keep one w1/w2/w3 module per expert), got {type(block).__name__}"
        )
    router = block.gate.weight  # (n_experts, d_model)
    gate_up, down = block.experts.gate_up_proj, block.experts.down_proj
    n_experts, d_model = router.shape
    d_mlp = down.shape[-1]
    moe = MoE(d_model, d_mlp, n_experts, block.top_k).to(device=router.device, dtype=router.dtype)
    with torch.no_grad():
        moe.W_router.copy_(router.T)
        moe.W_gate.copy_(gate_up[:, :d_mlp].transpose(1, 2))  # (n_experts, d_model, d_mlp)
        moe.W_in.copy_(gate_up[:, d_mlp:].transpose(1, 2))
        moe.W_out.copy_(down.transpose(1, 2))  # (n_experts, d_mlp, d_model)
    return moe
