"""Exercise ``attention_scores(q, k)``: every query's dot product with every key, scaled by 1/sqrt(d_head).

Required form (stated in the notebook): shape (..., q_pos, k_pos), one row per query.
"""

from __future__ import annotations

import math

import torch

from course_utils.attention.dot_product import attention_scores as _scores
from course_utils.checks.attention._cases import qkv_cases
from course_utils.checks.bank import Bank
from course_utils.checks.core import Exercise, Property


def attention_scores(q, k):
    """Reference: q @ kᵀ / sqrt(d_head), shape (..., q_pos, k_pos)."""
    return _scores(q, k)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "no scaling", "you forgot to scale: divide the dot products by the square root of d_head (the last dim of q)"
)
def scores_unscaled(q, k):
    return q @ k.transpose(-2, -1)


@bank.mistake("divides by d_head", "you divided by d_head itself: the scale is its square root")
def scores_over_d_head(q, k):
    return q @ k.transpose(-2, -1) / q.shape[-1]


@bank.mistake(
    "keys times queries",
    "rows and columns are swapped: the required shape is (..., q_pos, k_pos), so row i belongs to query i",
)
def scores_transposed(q, k):
    return k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])


@bank.mistake(
    "scaled by the number of keys",
    "you scaled by the square root of the number of keys: the scale uses the feature width d_head = q.shape[-1]",
)
def scores_over_sqrt_k_pos(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("divide by torch.sqrt(torch.tensor(d))")
def scores_torch_sqrt(q, k):
    return q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(q.shape[-1]))


@bank.alternative("multiply by torch.rsqrt")
def scores_rsqrt(q, k):
    return torch.matmul(q, k.transpose(-1, -2)) * torch.rsqrt(torch.tensor(float(k.size(-1))))


@bank.alternative("einsum")
def scores_einsum(q, k):
    return torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5


@bank.alternative("scale q first, matmul with .mT")
def scores_scale_queries_first(q, k):
    return (q / math.sqrt(q.shape[-1])) @ k.mT


ATTENTION_SCORES = Exercise(
    name="attention_scores",
    reference=attention_scores,
    cases=lambda seed: qkv_cases(seed, with_v=False),
    properties=[
        Property(
            "shape (..., q_pos, k_pos)",
            lambda c, out: tuple(out.shape) == (*c.args[0].shape[:-1], c.args[1].shape[-2]),
            "the scores have one row per query and one column per key: shape (..., q_pos, k_pos)",
        )
    ],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Every entry is one query's dot product with one key. A matrix product of the queries with the keys, "
        "turned on their side, computes all of them at once; then apply the scale.",
        "Swap only the last two dimensions of k (leading batch and head dimensions must stay where they are), so "
        "that (..., q_pos, d_head) times (..., d_head, k_pos) gives (..., q_pos, k_pos). Divide by the square root "
        "of d_head, the size of the last dimension of q.",
    ],
)
EXERCISES = {ATTENTION_SCORES.name: ATTENTION_SCORES}


def check_attention_scores(fn):
    """Check a student's ``attention_scores(q, k)``."""
    return ATTENTION_SCORES.check(fn)
