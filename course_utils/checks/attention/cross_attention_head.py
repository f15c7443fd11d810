"""Exercise ``CrossAttentionHead``: queries from one sequence, keys and values from another (the student writes
the class).

The check builds ``CrossAttentionHead(d_model, d_context, d_head)``, copies seeded weights into its four
parameters and calls ``forward(x, context)``. Required form (stated in the notebook): ``W_Q`` of shape
(d_model, d_head), ``W_K`` and ``W_V`` of shape (d_context, d_head), ``W_O`` of shape (d_head, d_model), used as
``x @ W_Q`` and ``context @ W_K``; ``nn.Linear`` layers of those names are accepted (``checks/weights.py``). Every
case has d_context != d_model and a context of another length than x, so a head that reads its keys from x fails.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.attention.dot_product import CrossAttentionHead as _ReferenceHead
from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.weights import Slot, compare_or_convention, convention_answer, load_weights
from course_utils.softmax import softmax


class CrossAttentionHead(_ReferenceHead):
    """Reference: W_Q (d_model × d_head), W_K, W_V (d_context × d_head), W_O (d_head × d_model)."""


SHAPES = {"W_Q": "(d_model, d_head)", "W_K": "(d_context, d_head)", "W_V": "(d_context, d_head)",
          "W_O": "(d_head, d_model)"}
USAGE = {"W_Q": "x @ W_Q", "W_K": "context @ W_K", "W_V": "context @ W_V", "W_O": "z @ W_O"}


def _cross_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, d_model, d_context, d_head, x_shape, context_shape in (
        ("d_model = 4, d_context = 6, d_head = 2; 2 queries, 5 context positions", 4, 6, 2, (2, 4), (5, 6)),
        ("d_model = 16, d_context = 8, d_head = 4; batch 2, 3 queries, 7 context positions", 16, 8, 4,
         (2, 3, 16), (2, 7, 8)),
    ):
        rows = {"W_Q": d_model, "W_K": d_context, "W_V": d_context, "W_O": d_head}
        cols = {"W_Q": d_head, "W_K": d_head, "W_V": d_head, "W_O": d_model}
        weights = {name: torch.randn(rows[name], cols[name], generator=gen) / math.sqrt(rows[name]) for name in rows}
        x, context = 2 * torch.randn(*x_shape, generator=gen), 2 * torch.randn(*context_shape, generator=gen)
        cases.append(Case(label, (d_model, d_context, d_head, x, context, weights)))
    return cases


def _run_cross_head(cls, case: Case):
    """Build ``cls(d_model, d_context, d_head)``, load the case's weights, run ``forward(x, context)``."""
    d_model, d_context, d_head, x, context, weights = case.args
    module = cls(d_model, d_context, d_head)
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"CrossAttentionHead should subclass torch.nn.Module, got an instance of {type(module).__name__}"
        )
    slots = [Slot(name, value, value, SHAPES[name], USAGE[name]) for name, value in weights.items()]
    problem = load_weights(module, slots)
    if problem is not None:
        return convention_answer(problem)
    with torch.no_grad():
        return module(x, context)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "softmax over queries",
    "your softmax runs over the queries: each query's weights over the context positions (the last dim) "
    "must sum to 1",
)
class CrossSoftmaxOverQueries(_ReferenceHead):
    def forward(self, x, context):
        q, k, v = x @ self.W_Q, context @ self.W_K, context @ self.W_V
        return softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-2) @ v @ self.W_O


@bank.mistake("no scaling", "the scores are not scaled: divide q·k by the square root of d_head before the softmax")
class CrossUnscaled(_ReferenceHead):
    def forward(self, x, context):
        q, k, v = x @ self.W_Q, context @ self.W_K, context @ self.W_V
        return softmax(q @ k.transpose(-2, -1), dim=-1) @ v @ self.W_O


@bank.mistake(
    "scaled by the context width",
    "you scaled by the square root of the context's width: the scale is the square root of d_head, the width "
    "of the queries and keys that are multiplied",
)
class CrossScaledByContextWidth(_ReferenceHead):
    def forward(self, x, context):
        q, k, v = x @ self.W_Q, context @ self.W_K, context @ self.W_V
        return softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_context), dim=-1) @ v @ self.W_O


@bank.mistake(
    "no W_O", "you stopped at the attention output (d_head wide): multiply by self.W_O to get back to d_model"
)
class CrossNoW_O(_ReferenceHead):
    def forward(self, x, context):
        return scaled_dot_product_attention(x @ self.W_Q, context @ self.W_K, context @ self.W_V)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.scaled_dot_product_attention")
class CrossFused(nn.Module):
    def __init__(self, d_model, d_context, d_head):
        super().__init__()
        self.W_Q = nn.Parameter(torch.zeros(d_model, d_head))
        self.W_K = nn.Parameter(torch.zeros(d_context, d_head))
        self.W_V = nn.Parameter(torch.zeros(d_context, d_head))
        self.W_O = nn.Parameter(torch.zeros(d_head, d_model))

    def forward(self, x, context):
        return F.scaled_dot_product_attention(x @ self.W_Q, context @ self.W_K, context @ self.W_V) @ self.W_O


@bank.alternative("einsum, keys and values stacked in one product")
class CrossEinsumStackedKV(nn.Module):
    def __init__(self, d_model, d_context, d_head):
        super().__init__()
        self.W_Q = nn.Parameter(torch.randn(d_model, d_head) * 0.02)
        self.W_K, self.W_V = (nn.Parameter(torch.randn(d_context, d_head) * 0.02) for _ in range(2))
        self.W_O = nn.Parameter(torch.randn(d_head, d_model) * 0.02)

    def forward(self, x, context):
        q = torch.einsum("...pm,md->...pd", x, self.W_Q)
        k, v = torch.einsum("...cm,smd->s...cd", context, torch.stack([self.W_K, self.W_V])).unbind(0)
        weights = torch.einsum("...qd,...kd->...qk", q, k).mul(q.shape[-1] ** -0.5).softmax(dim=-1)
        return torch.einsum("...qk,...kd,dm->...qm", weights, v, self.W_O)


@bank.alternative("nn.Linear layers (PyTorch's storage), default bias")
class CrossLinear(nn.Module):
    def __init__(self, d_model, d_context, d_head):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_head)
        self.W_K, self.W_V = nn.Linear(d_context, d_head), nn.Linear(d_context, d_head)  # biases: the check zeroes
        self.W_O = nn.Linear(d_head, d_model, bias=False)

    def forward(self, x, context):
        return self.W_O(F.scaled_dot_product_attention(self.W_Q(x), self.W_K(context), self.W_V(context)))


CROSS_ATTENTION_HEAD = Exercise(
    name="cross_attention_head",
    reference=CrossAttentionHead,
    cases=_cross_cases,
    run=_run_cross_head,
    compare=compare_or_convention(),
    wants_class=True,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Same head as before, with two inputs: decide which of the four matrices reads x and which read context, "
        "and give each the width of the sequence it reads.",
        "Queries are rows of x times W_Q; keys and values are rows of context times W_K and W_V. The pattern is "
        "(..., pos, context_pos), a softmax over the context positions; then the weighted values and W_O.",
    ],
)
EXERCISES = {CROSS_ATTENTION_HEAD.name: CROSS_ATTENTION_HEAD}


def check_cross_attention_head(cls):
    """Check a student's ``CrossAttentionHead`` class, built as ``CrossAttentionHead(d_model, d_context, d_head)``."""
    return CROSS_ATTENTION_HEAD.check(cls)
