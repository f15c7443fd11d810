"""Exercise ``sdp_attention(q, k, v)``: softmax(q kᵀ / sqrt(d_head)) v, the softmax over the keys, no mask."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.attention.dot_product import attention_scores as _scores
from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.checks.attention._cases import qkv_cases
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.softmax import softmax


def sdp_attention(q, k, v):
    """Reference: softmax(q kᵀ / sqrt(d_head)) v, the softmax over keys (the last dim), no mask."""
    return scaled_dot_product_attention(q, k, v)


def _rows_are_averages(case: Case, out) -> bool:
    v = case.args[2].double()
    lo, hi = v.amin(dim=-2, keepdim=True), v.amax(dim=-2, keepdim=True)
    out = torch.as_tensor(out).double()
    return bool(((out >= lo - 1e-6) & (out <= hi + 1e-6)).all())


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "softmax over queries",
    "your softmax runs down the columns: normalise over the keys, dim=-1, so each query's weights sum to 1",
)
def sdpa_softmax_over_queries(q, k, v):
    return softmax(_scores(q, k), dim=-2) @ v


@bank.mistake("no scaling", "you forgot to divide the scores by the square root of d_head before the softmax")
def sdpa_unscaled(q, k, v):
    return softmax(q @ k.transpose(-2, -1), dim=-1) @ v


@bank.mistake("weights only", "you returned the attention weights: multiply them by v to get the output")
def sdpa_weights_only(q, k, v):
    return softmax(_scores(q, k), dim=-1)


@bank.mistake(
    "scaled after the softmax",
    "the scale belongs to the scores, before the softmax: scaling afterwards only shrinks the output",
)
def sdpa_scaled_after_softmax(q, k, v):
    return softmax(q @ k.transpose(-2, -1), dim=-1) @ v / math.sqrt(q.shape[-1])


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("divide by torch.sqrt(torch.tensor(d))")
def sdpa_torch_sqrt(q, k, v):
    scores = q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(q.shape[-1]))
    return torch.softmax(scores, dim=-1) @ v


@bank.alternative("multiply by torch.rsqrt")
def sdpa_rsqrt(q, k, v):
    scores = torch.matmul(q, k.transpose(-2, -1)) * torch.rsqrt(torch.tensor(float(q.shape[-1])))
    return torch.matmul(scores.softmax(-1), v)


@bank.alternative("einsum with a hand-written stable softmax")
def sdpa_einsum_manual_softmax(q, k, v):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    weights = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return torch.einsum("...qk,...kd->...qd", weights, v)


@bank.alternative("F.scaled_dot_product_attention")
def sdpa_fused(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


SDP_ATTENTION = Exercise(
    name="sdp_attention",
    reference=sdp_attention,
    cases=lambda seed: qkv_cases(seed, with_v=True),
    properties=[
        Property(
            "outputs are averages of values",
            _rows_are_averages,
            "each output is a weighted AVERAGE of value rows, "
            "so it must lie between their smallest and largest entries",
        )
    ],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Three steps: the scaled scores (computed as in the previous exercise), a softmax that turns "
        "each query's row of scores "
        "into weights summing to 1, and a weighted sum of the value rows with those weights.",
        "The softmax runs over the keys, i.e. the last dimension of the scores. The weighted sum of value rows for "
        "every query at once is one more matrix product: (..., q_pos, k_pos) times (..., k_pos, d_v).",
    ],
)
EXERCISES = {SDP_ATTENTION.name: SDP_ATTENTION}


def check_sdp_attention(fn):
    """Check a student's ``sdp_attention(q, k, v)``."""
    return SDP_ATTENTION.check(fn)
