"""Typical mistakes and accepted alternatives for the notebook-03 checks (``checks/attention.py``).

Each function or class is one way a student might write ``attention_scores``, ``sdp_attention`` or
``AttentionHead``: the mistakes are wrong (each check must recognise it and show its hint), the
alternatives are right but written differently from the reference (each check must accept it).
Nothing here is graded directly.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.attention import AttentionHead as _ReferenceHead
from course_utils.attention import attention_scores as _scores
from course_utils.attention import scaled_dot_product_attention
from course_utils.softmax import softmax


# -- attention_scores ----------------------------------------------------------------------------
def scores_unscaled(q, k):
    return q @ k.transpose(-2, -1)


def scores_over_d_head(q, k):
    return q @ k.transpose(-2, -1) / q.shape[-1]


def scores_transposed(q, k):
    return k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])


def scores_over_sqrt_k_pos(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])


def scores_torch_sqrt(q, k):
    return q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(q.shape[-1]))


def scores_rsqrt(q, k):
    return torch.matmul(q, k.transpose(-1, -2)) * torch.rsqrt(torch.tensor(float(k.size(-1))))


def scores_einsum(q, k):
    return torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5


def scores_scale_queries_first(q, k):
    return (q / math.sqrt(q.shape[-1])) @ k.mT


# -- sdp_attention -------------------------------------------------------------------------------
def sdpa_softmax_over_queries(q, k, v):
    return softmax(_scores(q, k), dim=-2) @ v


def sdpa_unscaled(q, k, v):
    return softmax(q @ k.transpose(-2, -1), dim=-1) @ v


def sdpa_weights_only(q, k, v):
    return softmax(_scores(q, k), dim=-1)


def sdpa_scaled_after_softmax(q, k, v):
    return softmax(q @ k.transpose(-2, -1), dim=-1) @ v / math.sqrt(q.shape[-1])


def sdpa_torch_sqrt(q, k, v):
    scores = q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(q.shape[-1]))
    return torch.softmax(scores, dim=-1) @ v


def sdpa_rsqrt(q, k, v):
    scores = torch.matmul(q, k.transpose(-2, -1)) * torch.rsqrt(torch.tensor(float(q.shape[-1])))
    return torch.matmul(scores.softmax(-1), v)


def sdpa_einsum_manual_softmax(q, k, v):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    weights = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return torch.einsum("...qk,...kd->...qd", weights, v)


def sdpa_fused(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


# -- AttentionHead -------------------------------------------------------------------------------
class HeadUnscaled(_ReferenceHead):
    def forward(self, x, mask=None):
        q, k, v = x @ self.W_Q, x @ self.W_K, x @ self.W_V
        return softmax(q @ k.transpose(-2, -1), dim=-1) @ v @ self.W_O


class HeadKeysFromW_Q(_ReferenceHead):
    def forward(self, x, mask=None):
        q, v = x @ self.W_Q, x @ self.W_V
        return scaled_dot_product_attention(q, q, v) @ self.W_O


class HeadNoW_O(_ReferenceHead):
    def forward(self, x, mask=None):
        return scaled_dot_product_attention(x @ self.W_Q, x @ self.W_K, x @ self.W_V)


class HeadSoftmaxOverQueries(_ReferenceHead):
    def forward(self, x, mask=None):
        q, k, v = x @ self.W_Q, x @ self.W_K, x @ self.W_V
        return softmax(_scores(q, k), dim=-2) @ v @ self.W_O


class HeadEinsum(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_Q, self.W_K, self.W_V = (nn.Parameter(torch.randn(d_model, d_head)) for _ in range(3))
        self.W_O = nn.Parameter(torch.randn(d_head, d_model))

    def forward(self, x):
        q = torch.einsum("...pm,md->...pd", x, self.W_Q)
        k = torch.einsum("...pm,md->...pd", x, self.W_K)
        v = torch.einsum("...pm,md->...pd", x, self.W_V)
        weights = torch.einsum("...qd,...kd->...qk", q, k).div(math.sqrt(q.shape[-1])).softmax(dim=-1)
        return torch.einsum("...qk,...kd,dm->...qm", weights, v, self.W_O)


class HeadFused(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_Q = nn.Parameter(torch.zeros(d_model, d_head))
        self.W_K = nn.Parameter(torch.zeros(d_model, d_head))
        self.W_V = nn.Parameter(torch.zeros(d_model, d_head))
        self.W_O = nn.Parameter(torch.zeros(d_head, d_model))

    def forward(self, x):
        return F.scaled_dot_product_attention(x @ self.W_Q, x @ self.W_K, x @ self.W_V) @ self.W_O


class HeadInitAndRsqrt(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        for name, shape in (
            ("W_Q", (d_model, d_head)),
            ("W_K", (d_model, d_head)),
            ("W_V", (d_model, d_head)),
            ("W_O", (d_head, d_model)),
        ):
            self.register_parameter(name, nn.Parameter(nn.init.xavier_uniform_(torch.empty(shape))))

    def forward(self, x):
        q, k, v = torch.matmul(x, self.W_Q), torch.matmul(x, self.W_K), torch.matmul(x, self.W_V)
        scores = q @ k.mT * torch.rsqrt(torch.tensor(float(q.size(-1))))
        return torch.softmax(scores, -1) @ v @ self.W_O


class HeadStackedProjection(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_Q, self.W_K, self.W_V = (nn.Parameter(torch.randn(d_model, d_head) * 0.02) for _ in range(3))
        self.W_O = nn.Parameter(torch.randn(d_head, d_model) * 0.02)

    def forward(self, x):
        qkv = x @ torch.cat([self.W_Q, self.W_K, self.W_V], dim=1)  # (..., pos, 3 * d_head)
        q, k, v = qkv.chunk(3, dim=-1)  # each (..., pos, d_head)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        return weights @ v @ self.W_O
