"""Exercise ``sdp_attention_backward(q, k, v, grad_out)``: dL/dq, dL/dk, dL/dv of attention, by hand.

Required form (stated in the notebook): return the tuple ``(grad_q, grad_k, grad_v)``, each of its input's
shape, for out = softmax(q kᵀ / sqrt(d_head)) v (no mask) and the upstream gradient ``grad_out`` = dL/dout.
The reference is ``course_utils.attention.gradients.sdp_attention_backward``, tested against autograd.
"""

from __future__ import annotations

import math

import torch

from course_utils.attention.gradients import sdp_attention_backward as _backward_reference
from course_utils.checks.attention._cases import qkv_cases
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise


def sdp_attention_backward(q, k, v, grad_out):
    """Reference: (dL/dq, dL/dk, dL/dv) for out = softmax(q kᵀ / sqrt(d_head)) v, given dL/dout."""
    return _backward_reference(q, k, v, grad_out)


def _backward_cases(seed: int) -> list[Case]:
    """The inputs of the forward exercises, each with an upstream gradient of the output's shape."""
    gen = torch.Generator().manual_seed(1000 + seed)
    cases = []
    for case in qkv_cases(seed, with_v=True):
        q, _, v = case.args
        grad_out = torch.randn(*q.shape[:-1], v.shape[-1], generator=gen, dtype=q.dtype)  # (..., q_pos, d_v)
        cases.append(Case(f"{case.label}, random grad_out", (*case.args, grad_out)))
    return cases


def backward_with(q, k, v, grad_out, *, full_jacobian=True, sum_dim=-1, scale_grads=True, scale_scores=True):
    """The backward pass with one step changed: the softmax Jacobian's correction term, its sum, the scales."""
    scale = 1 / math.sqrt(q.shape[-1])
    weights = torch.softmax(q @ k.transpose(-2, -1) * (scale if scale_scores else 1.0), dim=-1)
    grad_weights = grad_out @ v.transpose(-2, -1)  # (..., q_pos, k_pos)
    correction = (grad_weights * weights).sum(dim=sum_dim, keepdim=True) if full_jacobian else 0.0
    grad_scores = weights * (grad_weights - correction)
    s = scale if scale_grads else 1.0
    return grad_scores @ k * s, grad_scores.transpose(-2, -1) @ q * s, weights.transpose(-2, -1) @ grad_out


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "softmax Jacobian's diagonal only",
    "your dL/dscores is p * dL/dp, the diagonal of the softmax Jacobian only: every weight of a row also depends "
    "on every other score of that row, which subtracts that row's weighted average of dL/dp",
)
def backward_diagonal_only(q, k, v, grad_out):
    return backward_with(q, k, v, grad_out, full_jacobian=False)


@bank.mistake(
    "softmax correction summed over queries",
    "the softmax's correction term sums over the keys of one query's row (the last dim), not down a column",
)
def backward_sum_over_queries(q, k, v, grad_out):
    return backward_with(q, k, v, grad_out, sum_dim=-2)


@bank.mistake(
    "no scale in dq and dk",
    "grad_v looks right but grad_q and grad_k are too large: the scores were divided by sqrt(d_head), so the "
    "chain rule multiplies their gradient by the same 1/sqrt(d_head) on the way back to q and k",
)
def backward_unscaled_grads(q, k, v, grad_out):
    return backward_with(q, k, v, grad_out, scale_grads=False)


@bank.mistake(
    "pattern recomputed without the scale",
    "the attention weights you recomputed are not the forward pass's: divide the scores by sqrt(d_head) "
    "before the softmax, as the forward pass does",
)
def backward_unscaled_pattern(q, k, v, grad_out):
    return backward_with(q, k, v, grad_out, scale_scores=False)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("einsum throughout")
def backward_einsum(q, k, v, grad_out):
    scale = q.shape[-1] ** -0.5
    weights = torch.einsum("...qd,...kd->...qk", q, k).mul(scale).softmax(dim=-1)
    grad_v = torch.einsum("...qk,...qe->...ke", weights, grad_out)
    grad_weights = torch.einsum("...qe,...ke->...qk", grad_out, v)
    row_dot = torch.einsum("...qk,...qk->...q", grad_weights, weights)[..., None]
    grad_scores = weights * (grad_weights - row_dot) * scale
    grad_q = torch.einsum("...qk,...kd->...qd", grad_scores, k)
    return grad_q, torch.einsum("...qk,...qd->...kd", grad_scores, q), grad_v


@bank.alternative("the full softmax Jacobian diag(p) - p pᵀ per row")
def backward_explicit_jacobian(q, k, v, grad_out):
    d_head = q.shape[-1]
    weights = torch.softmax(q @ k.mT / math.sqrt(d_head), dim=-1)  # (..., q_pos, k_pos)
    jacobian = torch.diag_embed(weights) - weights[..., :, None] * weights[..., None, :]  # (..., q_pos, k_pos, k_pos)
    grad_weights = grad_out @ v.mT
    grad_scores = (jacobian @ grad_weights[..., None]).squeeze(-1) / math.sqrt(d_head)
    return grad_scores @ k, grad_scores.mT @ q, weights.mT @ grad_out


@bank.alternative("scale folded into q, float32 arithmetic")
def backward_scaled_queries_float32(q, k, v, grad_out):
    scale = 1 / math.sqrt(q.shape[-1])
    q32, k32, v32, g32 = (t.float() for t in (q, k, v, grad_out))
    q_scaled = q32 * scale
    weights = torch.softmax(q_scaled @ k32.transpose(-1, -2), dim=-1)
    grad_weights = g32 @ v32.transpose(-1, -2)
    grad_scores = weights * grad_weights - weights * (weights * grad_weights).sum(-1, keepdim=True)
    return grad_scores @ k32 * scale, grad_scores.transpose(-1, -2) @ q_scaled, weights.transpose(-1, -2) @ g32


SDP_ATTENTION_BACKWARD = Exercise(
    name="sdp_attention_backward",
    reference=sdp_attention_backward,
    cases=_backward_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Recompute the forward pass's weights first. Then walk back one step at a time: the output is the weights "
        "times v (two matrix-product gradients), the weights are a softmax of the scores, and the scores are a "
        "scaled product of q and k (two more matrix-product gradients).",
        "For Y = A @ B, dL/dA = dL/dY @ Bᵀ and dL/dB = Aᵀ @ dL/dY. Through a softmax p of a row s, "
        "dL/ds_j = p_j (dL/dp_j − Σ_i p_i dL/dp_i). The scale 1/sqrt(d_head) of the scores multiplies the "
        "gradients of q and k once more.",
    ],
)
EXERCISES = {SDP_ATTENTION_BACKWARD.name: SDP_ATTENTION_BACKWARD}


def check_sdp_attention_backward(fn):
    """Check a student's ``sdp_attention_backward(q, k, v, grad_out)``."""
    return SDP_ATTENTION_BACKWARD.check(fn)
