"""A mixture-of-experts layer: a router picks k of E SwiGLU experts for every token.

Covers the SwiGLU expert (``swiglu``, ``SwiGLU``), the ``MoE`` module (router weights and the
experts' stacked weights, routing, then grouped or dense dispatch, with an optional expert capacity)
and copying the weights of ``transformers``' ``MixtralSparseMoeBlock`` into it.
``MoE(d_model=8, d_mlp=16, n_experts=4, k=2)(x)`` maps ``x`` of shape (batch, pos, 8) to the same shape.
Its pieces live beside it: the router and the capacity in ``course_utils.moe.routing``, the three
dispatches (the per-token loop as the readable reference, the grouped one used in practice, the
dense one) in ``course_utils.moe.dispatch``; the names notebook 07 uses (``moe.top_k_gates``,
``moe.dispatch_naive``, ...) can be reached from here too. Load-balancing losses are in
``course_utils.moe.balancing``, the training experiment in ``course_utils.moe.experiment``.
Leaves out expert parallelism, shared experts (counted in ``moe_counting``), router jitter noise and
fused grouped matmuls.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor, nn

from course_utils.moe.dispatch import Expert, dispatch_dense, dispatch_grouped
from course_utils.moe.dispatch import dispatch_naive  # noqa: F401 (notebook 07 calls moe.dispatch_naive)
from course_utils.moe.routing import (
    Routing,
    _check_no_nan,
    _expert_capacity,
    _top_k_gates,
    capacity_mask,
    check_capacity_factor,
    check_experts_and_k,
)
from course_utils.moe.routing import top_k_gates, top_k_gates_mixtral  # noqa: F401 (notebook 07 calls moe.top_k_gates)
from course_utils.validate import non_negative_number, one_of, positive_int

DISPATCH = ("grouped", "dense")


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
    """A SwiGLU MLP as a module: ``SwiGLU(d_model=8, d_mlp=16)(torch.randn(3, 8))`` has shape (3, 8).

    One expert here, and the whole feed-forward of a Llama-style block (``course_utils.llama``; its
    usual width is ``llama.swiglu_width(d_model)``). Weights normal with std ``init_std``, drawn
    from ``generator`` when given (else torch's global random state, in the order gate, in, out).
    """

    def __init__(self, d_model: int, d_mlp: int, init_std: float = 0.02, generator: torch.Generator | None = None):
        super().__init__()
        self.d_model, self.d_mlp = positive_int("d_model", d_model), positive_int("d_mlp", d_mlp)
        init_std = non_negative_number("init_std", init_std)
        self.W_gate = nn.Parameter(torch.randn(d_model, d_mlp, generator=generator) * init_std)
        self.W_in = nn.Parameter(torch.randn(d_model, d_mlp, generator=generator) * init_std)
        self.W_out = nn.Parameter(torch.randn(d_mlp, d_model, generator=generator) * init_std)

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        if not isinstance(x, Tensor) or x.ndim < 1 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have last dimension d_model={self.d_model}, got {getattr(x, 'shape', type(x).__name__)}"
            )
        return swiglu(x, self.W_gate, self.W_in, self.W_out)


class MoE(nn.Module):
    """A mixture-of-experts feed-forward block: ``MoE(d_model=8, d_mlp=16, n_experts=4, k=2)(x)``.

    Maps (batch, pos, d_model) or (tokens, d_model) to the same shape. ``W_router`` is
    (d_model, n_experts); the experts' SwiGLU weights are stacked, ``W_gate``/``W_in`` of shape
    (n_experts, d_model, d_mlp) and ``W_out`` (n_experts, d_mlp, d_model), as transformers stores
    them. With ``capacity_factor`` set, each expert takes at most ``expert_capacity(tokens,
    n_experts, k, capacity_factor)`` assignments per call and drops the rest. ``selection_bias`` (a
    buffer, zeros by default) is DeepSeek-V3's balancing bias, added to the softmax probabilities for
    choosing only (V3 itself adds it to sigmoid affinities: ``moe_deepseek``). ``dispatch`` is
    ``"grouped"`` or ``"dense"``.
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
