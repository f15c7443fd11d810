"""The backward pass of scaled dot-product attention, written out by hand.

Covers: ``softmax_backward`` (the vector-Jacobian product of a softmax along the last dim:
``p * (g - (g * p).sum(-1))``) and ``sdp_attention_backward(q, k, v, grad_out)``, which returns
dL/dq, dL/dk and dL/dv for out = softmax(q kᵀ / sqrt(d_head)) v given dL/dout, without autograd.
The tests compare both with ``torch.autograd``. Any leading (batch, head) dims; the code follows the
inputs' device.

Leaves out: masks (a masked score has weight 0, so its gradient is 0 through the same formula),
dropout, and the memory-saving recomputation of fused kernels (FlashAttention's backward recomputes
the pattern block by block instead of storing it).
"""

from __future__ import annotations

import math

from jaxtyping import Float
from torch import Tensor

from course_utils.attention import attention_pattern
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
