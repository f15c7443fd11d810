"""Multi-head attention with its weights stored per head, the way interpretability code stores them.

Covers ``split_heads``/``merge_heads`` (the reshapes between a ``d_model``-wide vector and
``n_heads`` slices of ``d_head``), the ``MultiHeadAttention`` module, whose parameters are
``W_Q, W_K, W_V`` of shape (n_heads, d_model, d_head), ``b_Q, b_K, b_V`` (n_heads, d_head),
``W_O`` (n_heads, d_head, d_model) and ``b_O`` (d_model,) (the layout of notebook 03's single
head, with a head axis in front, and of TransformerLens), its per-head view (each head's output
through its own ``W_O[h]``, which sums to the module's output), copying the weights into
``torch.nn.MultiheadAttention``, the same layer with one fused ``W_QKV`` projection
(``FusedMultiHeadAttention``, the storage of ``nn.MultiheadAttention`` and nanoGPT), and counting
parameters and matmul FLOPs.
The attention itself is ``course_utils.attention.dot_product.scaled_dot_product_attention``.
Leaves out grouped-query attention (``course_utils.attention.grouped_query``), KV caching and dropout.
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from course_utils.attention.dot_product import attention_pattern, scaled_dot_product_attention
from course_utils.masking import causal_mask
from course_utils.validate import positive_int


def _check_n_heads(d_model: int, n_heads) -> int:
    positive_int("d_model", d_model), positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
    return n_heads


def split_heads(x: Float[Tensor, "batch pos d_model"], n_heads: int) -> Float[Tensor, "batch head pos d_head"]:
    """Cut the last axis into ``n_heads`` slices of width d_head and move heads before positions.

    ``split_heads(torch.arange(4.).reshape(1, 1, 4), 2)`` -> ``[[[[0., 1.]], [[2., 3.]]]]`` (shape 1, 2, 1, 2).
    """
    if not isinstance(x, Tensor) or x.ndim != 3:
        raise ValueError(
            f"x must be a tensor of shape (batch, pos, d_model), got {getattr(x, 'shape', type(x).__name__)}"
        )
    batch, pos, d_model = x.shape
    n_heads = _check_n_heads(d_model, n_heads)
    x = x.reshape(batch, pos, n_heads, d_model // n_heads)  # (batch, pos, head, d_head)
    return x.transpose(1, 2)  # (batch, head, pos, d_head)


def merge_heads(z: Float[Tensor, "batch head pos d_head"]) -> Float[Tensor, "batch pos d_model"]:
    """Undo ``split_heads``: put the heads' outputs side by side. ``merge_heads(split_heads(x, h))`` -> ``x``."""
    if not isinstance(z, Tensor) or z.ndim != 4:
        raise ValueError(
            f"z must be a tensor of shape (batch, head, pos, d_head), got {getattr(z, 'shape', type(z).__name__)}"
        )
    batch, n_heads, pos, d_head = z.shape
    z = z.transpose(1, 2)  # (batch, pos, head, d_head)
    return z.reshape(batch, pos, n_heads * d_head)  # (batch, pos, d_model)


def _head_mask(mask: Tensor | None) -> Tensor | None:
    """A 3-d mask is (batch, q_pos, k_pos): give it a head axis so it lines up with (batch, head, q, k)."""
    if mask is not None and isinstance(mask, Tensor) and mask.ndim == 3:
        return mask[:, None]  # (batch, 1, q_pos, k_pos)
    return mask


class MultiHeadAttention(nn.Module):
    """``MultiHeadAttention(d_model=8, n_heads=2)(x)`` maps (batch, pos, 8) to (batch, pos, 8).

    Head ``h`` computes ``q = x @ W_Q[h] + b_Q[h]`` (likewise k, v), attends, and writes
    ``z @ W_O[h]`` back; the heads' writes are summed and ``b_O`` added. ``mask`` (torch.bool,
    True = may attend) broadcasts to (batch, head, q_pos, k_pos); a 3-d mask is read as
    (batch, q_pos, k_pos), e.g. ``causal_mask(T) & padding_mask(lengths, T)``.
    Initialisation: uniform in ±1/sqrt(d_model), as ``nn.Linear`` does; ``init_std`` instead
    draws the weights from N(0, init_std²) with zero biases (GPT-2 uses 0.02); ``generator``, if
    given, is used instead of torch's global random state.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        bias: bool = True,
        init_std: float | None = None,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        self.d_model, self.n_heads = d_model, _check_n_heads(d_model, n_heads)
        self.d_head = d_head = d_model // n_heads
        self.W_Q = nn.Parameter(torch.empty(n_heads, d_model, d_head))
        self.W_K = nn.Parameter(torch.empty(n_heads, d_model, d_head))
        self.W_V = nn.Parameter(torch.empty(n_heads, d_model, d_head))
        self.W_O = nn.Parameter(torch.empty(n_heads, d_head, d_model))
        for name, shape in (
            ("b_Q", (n_heads, d_head)),
            ("b_K", (n_heads, d_head)),
            ("b_V", (n_heads, d_head)),
            ("b_O", (d_model,)),
        ):
            self.register_parameter(name, nn.Parameter(torch.empty(shape)) if bias else None)
        self.reset_parameters(init_std, generator)

    @torch.no_grad()
    def reset_parameters(self, init_std: float | None = None, generator: torch.Generator | None = None) -> None:
        """Uniform ±1/sqrt(d_model) for weights and biases, or N(0, init_std²) weights and zero biases.

        Draws from ``generator`` when given (it must live on the parameters' device), else from
        torch's global generator, as every ``nn`` module does.
        """
        bound = 1 / math.sqrt(self.d_model)  # both fans in are d_model (W_O's is n_heads * d_head)
        for name in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"):
            p = getattr(self, name)
            if p is None:
                continue
            if init_std is None:
                p.uniform_(-bound, bound, generator=generator)
            elif name.startswith("W"):
                p.normal_(0.0, init_std, generator=generator)
            else:
                p.zero_()

    def qkv(self, x: Float[Tensor, "batch pos d_model"]) -> tuple[Tensor, Tensor, Tensor]:
        """Queries, keys and values of every head, each (batch, head, pos, d_head)."""
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have shape (batch, pos, d_model={self.d_model}), got {getattr(x, 'shape', type(x).__name__)}"
            )
        out = []
        for W, b in ((self.W_Q, self.b_Q), (self.W_K, self.b_K), (self.W_V, self.b_V)):
            y = torch.einsum("bpm,hmd->bhpd", x, W)  # (batch, head, pos, d_head)
            out.append(y if b is None else y + b[:, None, :])
        return tuple(out)

    def head_outputs(
        self, x: Float[Tensor, "batch pos d_model"], mask: Bool[Tensor, "..."] | None = None, impl: str = "reference"
    ) -> Float[Tensor, "batch head pos d_head"]:
        """Each head's attention output z, before ``W_O``."""
        q, k, v = self.qkv(x)
        return scaled_dot_product_attention(q, k, v, _head_mask(mask), impl=impl)

    def pattern(
        self, x: Float[Tensor, "batch pos d_model"], mask: Bool[Tensor, "..."] | None = None
    ) -> Float[Tensor, "batch head q_pos k_pos"]:
        """The attention weights of every head."""
        q, k, _ = self.qkv(x)
        return attention_pattern(q, k, _head_mask(mask))

    def per_head_contributions(
        self, x: Float[Tensor, "batch pos d_model"], mask: Bool[Tensor, "..."] | None = None, impl: str = "reference"
    ) -> Float[Tensor, "batch head pos d_model"]:
        """What each head writes: its z times its own ``W_O[h]``.
        Summed over heads, plus ``b_O``, this is ``forward``."""
        z = self.head_outputs(x, mask, impl)  # (batch, head, pos, d_head)
        return torch.einsum("bhpd,hdm->bhpm", z, self.W_O)  # (batch, head, pos, d_model)

    def forward(
        self, x: Float[Tensor, "batch pos d_model"], mask: Bool[Tensor, "..."] | None = None, impl: str = "reference"
    ) -> Float[Tensor, "batch pos d_model"]:
        z = self.head_outputs(x, mask, impl)  # (batch, head, pos, d_head)
        out = torch.einsum("bhpd,hdm->bpm", z, self.W_O)  # (batch, pos, d_model): the heads' writes, summed
        return out if self.b_O is None else out + self.b_O


def to_torch_mha(module: MultiHeadAttention) -> nn.MultiheadAttention:
    """A ``torch.nn.MultiheadAttention`` (batch_first) holding the same weights as ``module``.

    torch stores each projection as one (d_model, d_model) matrix applied as ``x @ weight.T``, head
    ``h`` owning output rows ``h*d_head:(h+1)*d_head``. Its boolean ``attn_mask`` means the opposite
    of the course's: True = *not* allowed, so pass ``~mask``.
    """
    if not isinstance(module, MultiHeadAttention):
        raise TypeError(f"module must be a MultiHeadAttention, got {type(module).__name__}")
    has_bias = module.b_Q is not None
    d_model = module.d_model
    torch_mha = nn.MultiheadAttention(d_model, module.n_heads, bias=has_bias, batch_first=True)
    torch_mha = torch_mha.to(device=module.W_Q.device, dtype=module.W_Q.dtype)

    def rows(W: Tensor) -> Tensor:  # (head, d_model, d_head) -> (head * d_head, d_model)
        return W.transpose(1, 2).reshape(d_model, d_model)

    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([rows(module.W_Q), rows(module.W_K), rows(module.W_V)]))
        torch_mha.out_proj.weight.copy_(module.W_O.reshape(d_model, d_model).T)  # (d_model, head * d_head)
        if has_bias:
            torch_mha.in_proj_bias.copy_(
                torch.cat([module.b_Q.reshape(-1), module.b_K.reshape(-1), module.b_V.reshape(-1)])
            )
            torch_mha.out_proj.bias.copy_(module.b_O)
    return torch_mha


class FusedMultiHeadAttention(nn.Module):
    """Multi-head attention with one fused projection: ``W_QKV = nn.Linear(d_model, 3 * d_model)``.

    Its output features are q, then k, then v (each ``d_model`` wide, head ``h`` owning features
    ``h * d_head`` onwards within each), the layout of ``nn.MultiheadAttention.in_proj_weight`` and
    nanoGPT's ``c_attn``; ``W_O = nn.Linear(d_model, d_model)``. ``causal=True`` applies the causal
    mask. ``FusedMultiHeadAttention(8, 2)(x)`` maps (batch, pos, 8) to (batch, pos, 8).
    """

    def __init__(self, d_model: int, n_heads: int, causal: bool = False, bias: bool = True):
        super().__init__()
        self.d_model, self.n_heads, self.causal = d_model, _check_n_heads(d_model, n_heads), bool(causal)
        self.W_QKV = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: Float[Tensor, "batch pos d_model"]) -> Float[Tensor, "batch pos d_model"]:
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have shape (batch, pos, d_model={self.d_model}), got {getattr(x, 'shape', type(x).__name__)}"
            )
        q, k, v = (split_heads(t, self.n_heads) for t in self.W_QKV(x).split(self.d_model, dim=-1))
        mask = causal_mask(x.shape[1], device=x.device) if self.causal else None
        return self.W_O(merge_heads(scaled_dot_product_attention(q, k, v, mask)))


def to_fused(module: MultiHeadAttention, causal: bool = False) -> FusedMultiHeadAttention:
    """The same layer as ``module`` with its projections fused into ``W_QKV`` (``causal`` as given)."""
    torch_mha = to_torch_mha(module)  # its in_proj is the fused (3 * d_model, d_model) weight
    fused = FusedMultiHeadAttention(module.d_model, module.n_heads, causal, bias=module.b_Q is not None)
    fused = fused.to(device=module.W_Q.device, dtype=module.W_Q.dtype)
    with torch.no_grad():
        fused.W_QKV.weight.copy_(torch_mha.in_proj_weight)
        fused.W_O.weight.copy_(torch_mha.out_proj.weight)
        if module.b_Q is not None:
            fused.W_QKV.bias.copy_(torch_mha.in_proj_bias)
            fused.W_O.bias.copy_(torch_mha.out_proj.bias)
    return fused


def attention_cost(d_model: int, n_heads: int, n_ctx: int, bias: bool = True) -> dict[str, int]:
    """Parameters and matmul FLOPs (2 per multiply-add) of one layer on one sequence of n_ctx tokens.

    ``attention_cost(512, 8, 1000)["params"]`` -> ``1050624``. ``projection_flops`` (8·n_ctx·d_model²,
    the four projections) and ``attention_flops`` (4·n_ctx²·d_model, scores and mixing) add up to
    ``flops``. None depends on n_heads (d_head = d_model / n_heads): many small heads cost what one
    big head does.
    """
    d_head = d_model // _check_n_heads(d_model, n_heads)
    positive_int("n_ctx", n_ctx)
    projections = 4 * 2 * n_ctx * d_model * d_model  # W_Q, W_K, W_V, W_O
    scores = n_heads * 2 * n_ctx * n_ctx * d_head  # q kᵀ in every head
    mixing = n_heads * 2 * n_ctx * n_ctx * d_head  # pattern @ v in every head
    return {
        "params": 4 * d_model * d_model + (4 * d_model if bias else 0),
        "projection_flops": projections,
        "attention_flops": scores + mixing,
        "flops": projections + scores + mixing,
    }
