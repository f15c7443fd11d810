"""Scaled dot-product attention, written out step by step, with the fused built-in beside it.

Covers: ``attention_scores`` (q·k / sqrt(d_head)), ``attention_pattern`` (softmax over keys, with an
optional boolean mask) and ``scaled_dot_product_attention`` (the pattern applied to the values),
plus an ``impl="fused"`` path that calls ``torch.nn.functional.scaled_dot_product_attention`` and
is tested to agree with the readable one. Any leading dimensions (batch, head) are allowed, as
long as q, k and v share them exactly; the code follows the inputs' device.

Mask convention (shared with ``course_utils.softmax.masked_softmax``): a ``torch.bool`` tensor,
``True`` = this query may attend to this key, broadcastable to ``(..., q_pos, k_pos)``. A query
row with nothing allowed gets all-zero weights and an all-zero output, never NaN, in both paths.

Also ``AttentionHead``, one head as an ``nn.Module`` (W_Q, W_K, W_V, W_O, no biases), and
``CrossAttentionHead``, whose keys and values come from another sequence of its own width.

Leaves out: splitting into several heads (see the multi-head module), dropout, causal-mask
builders, and any KV cache.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor, nn

from course_utils.softmax import masked_softmax_, row_entropy
from course_utils.validate import bool_tensor, float_tensor, has_data, positive_int

IMPLS = ("reference", "fused")


def _shape(x: Tensor) -> tuple[int, ...]:
    return tuple(x.shape)


def _check_tensor(name: str, x: object, layout: str) -> Tensor:
    """Type, rank, emptiness and finiteness checks shared by q, k and v."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {layout}, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype} (shape {_shape(x)})")
    if x.ndim < 2:
        raise ValueError(f"{name} must have shape {layout} (at least 2 dims), got shape {_shape(x)}")
    if x.shape[-2] == 0 or x.shape[-1] == 0:
        raise ValueError(
            f"{name} is empty: expected shape {layout} with positions and features > 0, got shape {_shape(x)}"
        )
    if has_data(x) and not bool(torch.isfinite(x).all()):  # a meta tensor has shapes only
        raise ValueError(f"{name} contains NaN or inf (shape {_shape(x)}); attention needs finite inputs")
    return x


def _check_pair(q: Tensor, k: Tensor) -> None:
    _check_tensor("q", q, "(..., q_pos, d_head)")
    _check_tensor("k", k, "(..., k_pos, d_head)")
    if q.ndim != k.ndim:
        raise ValueError(f"q and k must have the same rank, got q {_shape(q)} and k {_shape(k)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same d_head (last dim), got q {_shape(q)} and k {_shape(k)}")
    if q.shape[:-2] != k.shape[:-2]:
        raise ValueError(f"q and k must have the same batch/head dims, got q {_shape(q)} and k {_shape(k)}")
    if q.dtype != k.dtype:
        raise TypeError(f"q and k must have the same dtype, got q {q.dtype} and k {k.dtype}")
    if q.device != k.device:
        raise ValueError(f"q and k must be on the same device, got q on {q.device} and k on {k.device}")


def _check_mask(mask: object, q: Tensor, k: Tensor) -> Tensor | None:
    if mask is None:
        return None
    bool_tensor("mask", mask)
    target = (*q.shape[:-1], k.shape[-2])  # (..., q_pos, k_pos)
    if mask.ndim > len(target):
        raise ValueError(f"mask has shape {_shape(mask)}, more dims than the scores {target}")
    try:
        fits = tuple(torch.broadcast_shapes(mask.shape, target)) == target
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            f"mask of shape {_shape(mask)} does not broadcast to the scores' shape {target} "
            f"(q {_shape(q)}, k {_shape(k)})"
        )
    return mask.to(q.device)


def attention_scores(
    q: Float[Tensor, "... q_pos d_head"], k: Float[Tensor, "... k_pos d_head"]
) -> Float[Tensor, "... q_pos k_pos"]:
    """Scaled dot products q·k / sqrt(d_head):
    ``attention_scores(tensor([[2., 2.]]), tensor([[2., 2.]]))`` -> ``[[5.657]]``.

    Entry ``[..., i, j]`` says how well query ``i`` matches key ``j``. Dividing by sqrt(d_head) keeps
    the scores' variance near 1 whatever d_head is, so the softmax does not saturate.
    """
    _check_pair(q, k)
    return _scores(q, k)


def _scores(q: Tensor, k: Tensor) -> Tensor:
    """The arithmetic of ``attention_scores`` on inputs already checked.

    Scaling the (small) queries before the product equals scaling the (large) scores after it, and
    saves a pass over the q_pos × k_pos scores.
    """
    return (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)  # (..., q_pos, k_pos)


def attention_pattern(
    q: Float[Tensor, "... q_pos d_head"],
    k: Float[Tensor, "... k_pos d_head"],
    mask: Bool[Tensor, "... q_pos k_pos"] | None = None,
) -> Float[Tensor, "... q_pos k_pos"]:
    """Attention weights, a softmax over keys: each row sums to 1 (or is all zeros if fully masked).

    ``attention_pattern(tensor([[1., 0.]]), tensor([[1., 0.], [1., 0.]]))`` -> ``[[0.5, 0.5]]``.
    """
    _check_pair(q, k)
    mask = _check_mask(mask, q, k)
    return masked_softmax_(_scores(q, k), mask, dim=-1)  # in place in the fresh scores: (..., q_pos, k_pos)


def scaled_dot_product_attention(
    q: Float[Tensor, "... q_pos d_head"],
    k: Float[Tensor, "... k_pos d_head"],
    v: Float[Tensor, "... k_pos d_head_v"],
    mask: Bool[Tensor, "... q_pos k_pos"] | None = None,
    *,
    impl: str = "reference",
) -> Float[Tensor, "... q_pos d_head_v"]:
    """softmax(q kᵀ / sqrt(d_head)) v: each query's output is a weighted average of the value rows.

    ``scaled_dot_product_attention(q, k, v)`` with one query equally similar to two keys whose
    values are ``[1, 0]`` and ``[0, 1]`` -> ``[[0.5, 0.5]]``. ``impl="fused"`` calls PyTorch's
    built-in kernel; both give the same numbers (tested), including zeros for fully masked rows.
    """
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
    _check_pair(q, k)
    _check_tensor("v", v, "(..., k_pos, d_head_v)")
    if v.ndim != k.ndim or v.shape[:-2] != k.shape[:-2]:
        raise ValueError(f"v must have the same batch/head dims as k, got k {_shape(k)} and v {_shape(v)}")
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"k and v must have the same number of positions k_pos, got k {_shape(k)} and v {_shape(v)}")
    if v.dtype != k.dtype:
        raise TypeError(f"v must have the same dtype as k, got k {k.dtype} and v {v.dtype}")
    if v.device != k.device:
        raise ValueError(f"v must be on the same device as k, got k on {k.device} and v on {v.device}")
    mask = _check_mask(mask, q, k)
    if impl == "reference":
        pattern = masked_softmax_(_scores(q, k), mask, dim=-1)  # in place in the fresh scores: (..., q_pos, k_pos)
        return pattern @ v  # (..., q_pos, d_head_v)
    if mask is not None and mask.ndim < 2:
        mask = mask.reshape(1, -1)  # (1, k_pos): torch's kernel wants at least 2 mask dims
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (..., q_pos, d_head_v)
    if mask is not None:  # some kernels return NaN for a query that may attend to nothing
        row_allowed = mask.any(dim=-1, keepdim=True)  # (..., q_pos, 1)
        out = torch.where(row_allowed, out, torch.zeros((), dtype=out.dtype, device=out.device))
    return out


def pattern_entropy(pattern: Float[Tensor, "... q_pos k_pos"]) -> Float[Tensor, "... q_pos"]:
    """Entropy of each attention row in nats (0·log 0 = 0): ``pattern_entropy(tensor([[0.5, 0.5]]))`` -> ``[0.693]``.

    log(k_pos) for a uniform row, 0 for a one-hot (saturated) row.
    """
    float_tensor("pattern", pattern, "(..., q_pos, k_pos)", finite=False)
    return row_entropy(pattern)


def random_scores(
    n_queries: int, n_keys: int, d_k: int, *, scaled: bool, seed: int = 0
) -> Float[Tensor, "n_queries n_keys"]:
    """q·k for random q, k with unit-variance entries (float64), divided by sqrt(d_k) when ``scaled``.

    ``random_scores(300, 300, 64, scaled=False).var()`` -> about 64; with ``scaled=True`` about 1.
    """
    positive_int("n_queries", n_queries), positive_int("n_keys", n_keys), positive_int("d_k", d_k)
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(n_queries, d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(n_keys, d_k, generator=gen, dtype=torch.float64)
    return attention_scores(q, k) if scaled else q @ k.T  # (n_queries, n_keys)


def pattern_stats(pattern: Float[Tensor, "... q_pos k_pos"]) -> dict[str, float]:
    """Mean largest weight and mean entropy (nats) of a pattern's rows.

    ``pattern_stats(tensor([[0.5, 0.5]]))`` -> ``{'max_weight': 0.5, 'entropy': 0.693...}``.
    """
    return {"max_weight": float(pattern.amax(dim=-1).mean()), "entropy": float(pattern_entropy(pattern).mean())}


def saturation_stats(n_keys: int, d_k: int, *, scaled: bool, n_queries: int = 200, seed: int = 0) -> dict[str, float]:
    """``pattern_stats`` of the softmax rows of ``random_scores``.

    ``saturation_stats(8, 512, scaled=False)["max_weight"]`` is close to 1 (one key takes it all).
    """
    return pattern_stats(masked_softmax_(random_scores(n_queries, n_keys, d_k, scaled=scaled, seed=seed), None))


class AttentionHead(nn.Module):
    """One attention head: ``AttentionHead(d_model=8, d_head=2)(x)`` maps (..., pos, 8) -> (..., pos, 8).

    Queries, keys and values are x @ W_Q, x @ W_K, x @ W_V (each d_model × d_head); the head's
    output, written back to the residual stream, is the attention result @ W_O (d_head × d_model).
    W_V and W_O together are a low-rank factorisation of a d_model × d_model value map. No mask
    and no biases here; ``mask`` is passed through for later notebooks.
    """

    def __init__(self, d_model: int, d_head: int, init_std: float = 0.02):
        super().__init__()
        positive_int("d_model", d_model), positive_int("d_head", d_head)
        self.d_model, self.d_head = d_model, d_head
        self.W_Q = nn.Parameter(torch.randn(d_model, d_head) * init_std)
        self.W_K = nn.Parameter(torch.randn(d_model, d_head) * init_std)
        self.W_V = nn.Parameter(torch.randn(d_model, d_head) * init_std)
        self.W_O = nn.Parameter(torch.randn(d_head, d_model) * init_std)

    def forward(
        self, x: Float[Tensor, "... pos d_model"], mask: Bool[Tensor, "... pos pos"] | None = None
    ) -> Float[Tensor, "... pos d_model"]:
        if not isinstance(x, torch.Tensor) or x.ndim < 2 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must be a tensor of shape (..., pos, d_model={self.d_model}), got "
                f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}"
            )
        q, k, v = x @ self.W_Q, x @ self.W_K, x @ self.W_V  # each (..., pos, d_head)
        return scaled_dot_product_attention(q, k, v, mask) @ self.W_O  # (..., pos, d_model)


class CrossAttentionHead(nn.Module):
    """One cross-attention head: queries from ``x``, keys and values from another sequence, ``context``.

    ``CrossAttentionHead(d_model=8, d_context=6, d_head=2)(x, context)`` maps x (..., pos, 8) and context
    (..., context_pos, 6) to (..., pos, 8): W_Q is d_model × d_head, W_K and W_V are d_context × d_head (the
    context may be wider or narrower, as text embeddings feeding an image model are), W_O is d_head × d_model.
    The pattern is (..., pos, context_pos), one row per query. No mask and no biases.
    """

    def __init__(self, d_model: int, d_context: int, d_head: int, init_std: float = 0.02):
        super().__init__()
        positive_int("d_model", d_model), positive_int("d_context", d_context), positive_int("d_head", d_head)
        self.d_model, self.d_context, self.d_head = d_model, d_context, d_head
        self.W_Q = nn.Parameter(torch.randn(d_model, d_head) * init_std)
        self.W_K = nn.Parameter(torch.randn(d_context, d_head) * init_std)
        self.W_V = nn.Parameter(torch.randn(d_context, d_head) * init_std)
        self.W_O = nn.Parameter(torch.randn(d_head, d_model) * init_std)

    def forward(
        self, x: Float[Tensor, "... pos d_model"], context: Float[Tensor, "... context_pos d_context"]
    ) -> Float[Tensor, "... pos d_model"]:
        for name, t, width in (("x", x, self.d_model), ("context", context, self.d_context)):
            if not isinstance(t, torch.Tensor) or t.ndim < 2 or t.shape[-1] != width:
                got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"{name} must be a tensor of shape (..., pos, {width}), got {got}")
        q = x @ self.W_Q  # (..., pos, d_head)
        k, v = context @ self.W_K, context @ self.W_V  # each (..., context_pos, d_head)
        return scaled_dot_product_attention(q, k, v) @ self.W_O  # (..., pos, d_model)
