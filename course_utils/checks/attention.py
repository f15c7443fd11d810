"""Checks for notebook 03 (attention): attention scores, scaled dot-product attention (no mask),
and one attention head as a torch module (the student writes the class; the check builds it and
copies in seeded weights, so only the maths is compared).

Each exercise has its cases, a bank of typical mistakes (with hints), a bank of accepted
alternatives (einsum, another way to write the scale, PyTorch's fused kernel...) and progressive
hints. The required forms are stated in the notebook first: scores of shape (..., q_pos, k_pos)
with one row per query, the softmax over the keys, and the head's four parameters with their
shapes (``W_Q`` (d_model, d_head): the slice ``W_Q[h]`` of notebook 05's (n_heads, d_model, d_head)).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from course_utils.attention import AttentionHead as _ReferenceHead
from course_utils.attention import attention_scores as _scores
from course_utils.attention import scaled_dot_product_attention
from course_utils.checks import _attention_banks as bank
from course_utils.checks.core import Alternative, Case, Exercise, Mistake, Property


def _qkv_cases(seed: int, with_v: bool) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)

    def make(*shape, dtype=torch.float64):
        return torch.randn(*shape, generator=gen, dtype=dtype)

    worked_q = torch.tensor([[2.0, 0.0], [0.0, 4.0], [2.0, 2.0]], dtype=torch.float64)  # the / cat / sat
    worked_k = torch.tensor([[0.0, 2.0], [4.0, 0.0], [2.0, 2.0]], dtype=torch.float64)
    worked_v = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=torch.float64)
    cases = [
        ("the / cat / sat worked example (d_k = 2)", worked_q, worked_k, worked_v),
        ("4 queries, 6 keys, d_head = 8", make(4, 8), make(6, 8), make(6, 3)),
        (
            "batch 2, 3 heads, 5 queries, 7 keys, d_head = 16 (float32)",
            make(2, 3, 5, 16, dtype=torch.float32),
            make(2, 3, 7, 16, dtype=torch.float32),
            make(2, 3, 7, 4, dtype=torch.float32),
        ),
    ]
    return [Case(label, (q, k, v) if with_v else (q, k)) for label, q, k, v in cases]


# -- attention scores ----------------------------------------------------------------------------
def attention_scores(q, k):
    """Reference: q @ kᵀ / sqrt(d_head), shape (..., q_pos, k_pos)."""
    return _scores(q, k)


ATTENTION_SCORES = Exercise(
    name="attention_scores",
    reference=attention_scores,
    cases=lambda seed: _qkv_cases(seed, with_v=False),
    properties=[
        Property(
            "shape (..., q_pos, k_pos)",
            lambda c, out: tuple(out.shape) == (*c.args[0].shape[:-1], c.args[1].shape[-2]),
            "the scores have one row per query and one column per key: shape (..., q_pos, k_pos)",
        )
    ],
    mistakes=[
        Mistake(
            "no scaling",
            bank.scores_unscaled,
            "you forgot to scale: divide the dot products by the square root of d_head (the last dim of q)",
        ),
        Mistake(
            "divides by d_head", bank.scores_over_d_head, "you divided by d_head itself: the scale is its square root"
        ),
        Mistake(
            "keys times queries",
            bank.scores_transposed,
            "rows and columns are swapped: the required shape is (..., q_pos, k_pos), so row i belongs to query i",
        ),
        Mistake(
            "scaled by the number of keys",
            bank.scores_over_sqrt_k_pos,
            "you scaled by the square root of the number of keys: "
            "the scale uses the feature width d_head = q.shape[-1]",
        ),
    ],
    alternatives=[
        Alternative("divide by torch.sqrt(torch.tensor(d))", bank.scores_torch_sqrt),
        Alternative("multiply by torch.rsqrt", bank.scores_rsqrt),
        Alternative("einsum", bank.scores_einsum),
        Alternative("scale q first, matmul with .mT", bank.scores_scale_queries_first),
    ],
    hints=[
        "Every entry is one query's dot product with one key. A matrix product of the queries with the keys, "
        "turned on their side, computes all of them at once; then apply the scale.",
        "Swap only the last two dimensions of k (leading batch and head dimensions must stay where they are), so "
        "that (..., q_pos, d_head) times (..., d_head, k_pos) gives (..., q_pos, k_pos). Divide by the square root "
        "of d_head, the size of the last dimension of q.",
    ],
)


# -- scaled dot-product attention ----------------------------------------------------------------
def sdp_attention(q, k, v):
    """Reference: softmax(q kᵀ / sqrt(d_head)) v, the softmax over keys (the last dim), no mask."""
    return scaled_dot_product_attention(q, k, v)


def _rows_are_averages(case: Case, out) -> bool:
    v = case.args[2].double()
    lo, hi = v.amin(dim=-2, keepdim=True), v.amax(dim=-2, keepdim=True)
    out = torch.as_tensor(out).double()
    return bool(((out >= lo - 1e-6) & (out <= hi + 1e-6)).all())


SDP_ATTENTION = Exercise(
    name="sdp_attention",
    reference=sdp_attention,
    cases=lambda seed: _qkv_cases(seed, with_v=True),
    properties=[
        Property(
            "outputs are averages of values",
            _rows_are_averages,
            "each output is a weighted AVERAGE of value rows, "
            "so it must lie between their smallest and largest entries",
        )
    ],
    mistakes=[
        Mistake(
            "softmax over queries",
            bank.sdpa_softmax_over_queries,
            "your softmax runs down the columns: normalise over the keys, dim=-1, so each query's weights sum to 1",
        ),
        Mistake(
            "no scaling",
            bank.sdpa_unscaled,
            "you forgot to divide the scores by the square root of d_head before the softmax",
        ),
        Mistake(
            "weights only",
            bank.sdpa_weights_only,
            "you returned the attention weights: multiply them by v to get the output",
        ),
        Mistake(
            "scaled after the softmax",
            bank.sdpa_scaled_after_softmax,
            "the scale belongs to the scores, before the softmax: scaling afterwards only shrinks the output",
        ),
    ],
    alternatives=[
        Alternative("divide by torch.sqrt(torch.tensor(d))", bank.sdpa_torch_sqrt),
        Alternative("multiply by torch.rsqrt", bank.sdpa_rsqrt),
        Alternative("einsum with a hand-written stable softmax", bank.sdpa_einsum_manual_softmax),
        Alternative("F.scaled_dot_product_attention", bank.sdpa_fused),
    ],
    hints=[
        "Three steps: the scaled scores (computed as in the previous exercise), a softmax that turns "
        "each query's row of scores "
        "into weights summing to 1, and a weighted sum of the value rows with those weights.",
        "The softmax runs over the keys, i.e. the last dimension of the scores. The weighted sum of value rows for "
        "every query at once is one more matrix product: (..., q_pos, k_pos) times (..., k_pos, d_v).",
    ],
)


# -- an attention head as a module ---------------------------------------------------------------
class AttentionHead(_ReferenceHead):
    """Reference: W_Q, W_K, W_V (d_model × d_head) and W_O (d_head × d_model); forward(x) -> (..., pos, d_model)."""


def _head_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, d_model, d_head, x_shape in (
        ("d_model = 4, d_head = 2, 3 positions", 4, 2, (3, 4)),
        ("d_model = 16, d_head = 4, batch 2 × 5 positions", 16, 4, (2, 5, 16)),
    ):
        weights = {
            name: torch.randn(*shape, generator=gen) / math.sqrt(shape[0])
            for name, shape in (
                ("W_Q", (d_model, d_head)),
                ("W_K", (d_model, d_head)),
                ("W_V", (d_model, d_head)),
                ("W_O", (d_head, d_model)),
            )
        }
        cases.append(Case(label, (d_model, d_head, 2 * torch.randn(*x_shape, generator=gen), weights)))
    return cases


def _run_head(cls, case: Case):
    """Build ``cls(d_model, d_head)``, copy the case's weights into W_Q, W_K, W_V, W_O, run it on x."""
    d_model, d_head, x, weights = case.args
    module = cls(d_model, d_head)
    if not isinstance(module, nn.Module):
        raise TypeError(f"AttentionHead should subclass torch.nn.Module, got an instance of {type(module).__name__}")
    with torch.no_grad():
        for name, value in weights.items():
            param = getattr(module, name, None)
            if not isinstance(param, torch.Tensor):
                raise AttributeError(f"the module needs a parameter self.{name} of shape {tuple(value.shape)}")
            if tuple(param.shape) != tuple(value.shape):
                raise ValueError(
                    f"self.{name} should have shape {tuple(value.shape)} (rows are d_model for W_Q, W_K, "
                    f"W_V: x @ W_Q), got {tuple(param.shape)}"
                )
            param.copy_(value)
        return module(x)


ATTENTION_HEAD = Exercise(
    name="attention_head",
    reference=AttentionHead,
    cases=_head_cases,
    run=_run_head,
    wants_class=True,
    mistakes=[
        Mistake(
            "no scaling",
            bank.HeadUnscaled,
            "the scores are not scaled: divide q·k by the square root of d_head before the softmax",
        ),
        Mistake(
            "keys made with W_Q",
            bank.HeadKeysFromW_Q,
            "your keys equal your queries: build keys with self.W_K, not self.W_Q",
        ),
        Mistake(
            "no W_O",
            bank.HeadNoW_O,
            "you stopped at the attention output (d_head wide): multiply by self.W_O to get back to d_model",
        ),
        Mistake(
            "softmax over queries",
            bank.HeadSoftmaxOverQueries,
            "your softmax runs over the queries: each query's weights over the keys (the last dim) must sum to 1",
        ),
    ],
    alternatives=[
        Alternative("einsum", bank.HeadEinsum),
        Alternative("F.scaled_dot_product_attention", bank.HeadFused),
        Alternative("torch.empty + nn.init, scale by torch.rsqrt", bank.HeadInitAndRsqrt),
        Alternative("one stacked W_QKV product, split afterwards", bank.HeadStackedProjection),
    ],
    hints=[
        "In __init__, register four nn.Parameter tensors with the names and shapes the text gives (their starting "
        "values do not matter: the check overwrites them). In forward, make queries, keys and values from x.",
        "forward computes scaled dot-product attention (as in the previous exercise) on the head's own "
        "queries, keys and values (rows of x times each "
        "d_model × d_head matrix), followed by one more product with W_O that takes each d_head-wide result "
        "back to d_model. Leading batch dimensions broadcast through every product.",
    ],
)

EXERCISES = {ex.name: ex for ex in (ATTENTION_SCORES, SDP_ATTENTION, ATTENTION_HEAD)}


def check_attention_scores(fn):
    """Check a student's ``attention_scores(q, k)``."""
    return ATTENTION_SCORES.check(fn)


def check_sdp_attention(fn):
    """Check a student's ``sdp_attention(q, k, v)``."""
    return SDP_ATTENTION.check(fn)


def check_attention_head(cls):
    """Check a student's ``AttentionHead`` class (an ``nn.Module`` built as ``AttentionHead(d_model, d_head)``)."""
    return ATTENTION_HEAD.check(cls)
