"""The backward pass of scaled dot-product attention, written out by hand.

Covers: ``softmax_backward`` (the vector-Jacobian product of a softmax along the last dim:
``p * (g - (g * p).sum(-1))``) and ``sdp_attention_backward(q, k, v, grad_out)``, which returns
dL/dq, dL/dk and dL/dv for out = softmax(q kᵀ / sqrt(d_head)) v given dL/dout, without autograd, and
``attention_head_backward``, the same one step further back: the gradients of one head's W_Q, W_K, W_V,
W_O and of its input x (which feeds three projections, so three gradients add up in it).
The tests compare all three with ``torch.autograd``. Any leading (batch, head) dims; the code follows the
inputs' device.

Leaves out: masks (a masked score has weight 0, so its gradient is 0 through the same formula),
dropout, and the memory-saving recomputation of fused kernels (FlashAttention's backward recomputes
the pattern block by block instead of storing it).
"""

from __future__ import annotations

import math

from jaxtyping import Float
from torch import Tensor

from course_utils.attention.dot_product import attention_pattern, scaled_dot_product_attention
from course_utils.validate import float_tensor


def softmax_backward(
    p: Float[Tensor, "... n"], grad_p: Float[Tensor, "... n"]
) -> Float[Tensor, "... n"]:
    """dL/ds for p = softmax(s) along the last dim, given p and dL/dp.

    The Jacobian of one row is diag(p) - p pᵀ, so dL/ds = p * (dL/dp - Σ_j p_j dL/dp_j):
    ``softmax_backward(tensor([0.5, 0.5]), tensor([1., 0.]))`` -> ``[0.25, -0.25]``.
    """
    float_tensor("p", p, "(..., n)"), float_tensor("grad_p", grad_p, "(..., n)")
    if p.shape != grad_p.shape:
        raise ValueError(f"grad_p must have p's shape {tuple(p.shape)}, got {tuple(grad_p.shape)}")
    return p * (grad_p - (grad_p * p).sum(dim=-1, keepdim=True))


def sdp_attention_backward(
    q: Float[Tensor, "... q_pos d_head"],
    k: Float[Tensor, "... k_pos d_head"],
    v: Float[Tensor, "... k_pos d_v"],
    grad_out: Float[Tensor, "... q_pos d_v"],
) -> tuple[Tensor, Tensor, Tensor]:
    """(dL/dq, dL/dk, dL/dv) for out = softmax(q kᵀ / sqrt(d_head)) v, given dL/dout.

    With P the pattern: dL/dv = Pᵀ dL/dout; dL/dP = dL/dout vᵀ; dL/dS through the softmax Jacobian;
    dL/dq = dL/dS k / sqrt(d_head) and dL/dk = dL/dSᵀ q / sqrt(d_head). One query and two keys with
    equal scores and values [1] and [0]: ``grad_v`` = ``[[0.5], [0.5]]`` for ``grad_out = [[1.]]``.
    """
    weights = attention_pattern(q, k)  # validates q and k: (..., q_pos, k_pos)
    float_tensor("v", v, "(..., k_pos, d_v)", min_dims=2)
    float_tensor("grad_out", grad_out, "(..., q_pos, d_v)", min_dims=2)
    if v.shape[:-1] != k.shape[:-1]:
        raise ValueError(f"v must have shape (..., k_pos, d_v) matching k {tuple(k.shape)}, got {tuple(v.shape)}")
    if grad_out.shape != (*q.shape[:-1], v.shape[-1]):
        raise ValueError(
            f"grad_out must have the output's shape {(*q.shape[:-1], v.shape[-1])}, got {tuple(grad_out.shape)}"
        )
    scale = 1 / math.sqrt(q.shape[-1])
    grad_v = weights.transpose(-2, -1) @ grad_out  # (..., k_pos, d_v)
    grad_scores = softmax_backward(weights, grad_out @ v.transpose(-2, -1))  # (..., q_pos, k_pos)
    grad_q = grad_scores @ k * scale  # (..., q_pos, d_head)
    grad_k = grad_scores.transpose(-2, -1) @ q * scale  # (..., k_pos, d_head)
    return grad_q, grad_k, grad_v


def attention_head_backward(
    x: Float[Tensor, "... pos d_model"],
    W_Q: Float[Tensor, "d_model d_head"],
    W_K: Float[Tensor, "d_model d_head"],
    W_V: Float[Tensor, "d_model d_head"],
    W_O: Float[Tensor, "d_head d_model"],
    grad_out: Float[Tensor, "... pos d_model"],
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """(dL/dx, dL/dW_Q, dL/dW_K, dL/dW_V, dL/dW_O) for out = attention(x W_Q, x W_K, x W_V) W_O, given dL/dout.

    A weight's gradient sums over every row it multiplied (batch and positions): dL/dW_Q = Σ xᵀ dL/dq; x feeds
    three projections, so dL/dx = dL/dq W_Qᵀ + dL/dk W_Kᵀ + dL/dv W_Vᵀ.
    """
    float_tensor("x", x, "(..., pos, d_model)", min_dims=2)
    d_model, d_head = x.shape[-1], W_Q.shape[-1]
    for name, W, shape, words in (("W_Q", W_Q, (d_model, d_head), "(d_model, d_head)"),
                                  ("W_K", W_K, (d_model, d_head), "(d_model, d_head)"),
                                  ("W_V", W_V, (d_model, d_head), "(d_model, d_head)"),
                                  ("W_O", W_O, (d_head, d_model), "(d_head, d_model)")):
        float_tensor(name, W, words, min_dims=2)
        if W.shape != shape:
            raise ValueError(f"{name} must have shape {words} = {shape}, got {tuple(W.shape)}")
    float_tensor("grad_out", grad_out, "(..., pos, d_model)", min_dims=2)
    if grad_out.shape != x.shape:
        raise ValueError(f"grad_out must have x's shape {tuple(x.shape)}, got {tuple(grad_out.shape)}")
    q, k, v = x @ W_Q, x @ W_K, x @ W_V  # each (..., pos, d_head)
    z = scaled_dot_product_attention(q, k, v)  # (..., pos, d_head)
    grad_q, grad_k, grad_v = sdp_attention_backward(q, k, v, grad_out @ W_O.T)
    rows = x.reshape(-1, d_model)  # (batch * pos, d_model): every row the weights multiplied
    grad_W_Q, grad_W_K, grad_W_V = (rows.T @ g.reshape(-1, d_head) for g in (grad_q, grad_k, grad_v))
    grad_W_O = z.reshape(-1, d_head).T @ grad_out.reshape(-1, d_model)  # (d_head, d_model)
    grad_x = grad_q @ W_Q.T + grad_k @ W_K.T + grad_v @ W_V.T  # (..., pos, d_model)
    return grad_x, grad_W_Q, grad_W_K, grad_W_V, grad_W_O
