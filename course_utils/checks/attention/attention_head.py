"""Exercise ``AttentionHead``: one attention head as a torch module (the student writes the class).

The check builds ``AttentionHead(d_model, d_head)`` and copies seeded weights into its four parameters,
so only the maths is compared. Required form (stated in the notebook): ``W_Q``, ``W_K``, ``W_V`` of
shape (d_model, d_head) and ``W_O`` of shape (d_head, d_model), used as ``x @ W_Q`` — the slice
``W_Q[h]`` of notebook 05's (n_heads, d_model, d_head). Equivalent storage (``_weights``): ``nn.Linear``
layers named ``W_Q``, ``W_K``, ``W_V`` (d_model -> d_head) and ``W_O`` (d_head -> d_model) are accepted
(weight = the transpose; a bias, which this head has not, is set to zero); a fused QKV layer, a
tensor of another shape or a missing name fails with one line naming this convention.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.attention.dot_product import AttentionHead as _ReferenceHead
from course_utils.attention.dot_product import attention_scores as _scores
from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.checks.weights import Slot, compare_or_convention, convention_answer, load_weights
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.softmax import softmax


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
    """Build ``cls(d_model, d_head)``, load the case's weights into W_Q, W_K, W_V, W_O, run it on x."""
    d_model, d_head, x, weights = case.args
    module = cls(d_model, d_head)
    if not isinstance(module, nn.Module):
        raise TypeError(f"AttentionHead should subclass torch.nn.Module, got an instance of {type(module).__name__}")
    slots = [
        Slot(name, value, value, "(d_head, d_model)" if name == "W_O" else "(d_model, d_head)", usage)
        for (name, value), usage in zip(weights.items(), ("x @ W_Q", "x @ W_K", "x @ W_V", "z @ W_O"))
    ]
    problem = load_weights(module, slots)
    if problem is not None:
        return convention_answer(problem)
    with torch.no_grad():
        return module(x)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no scaling", "the scores are not scaled: divide q·k by the square root of d_head before the softmax")
class HeadUnscaled(_ReferenceHead):
    def forward(self, x, mask=None):
        q, k, v = x @ self.W_Q, x @ self.W_K, x @ self.W_V
        return softmax(q @ k.transpose(-2, -1), dim=-1) @ v @ self.W_O


@bank.mistake("keys made with W_Q", "your keys equal your queries: build keys with self.W_K, not self.W_Q")
class HeadKeysFromW_Q(_ReferenceHead):
    def forward(self, x, mask=None):
        q, v = x @ self.W_Q, x @ self.W_V
        return scaled_dot_product_attention(q, q, v) @ self.W_O


@bank.mistake(
    "no W_O", "you stopped at the attention output (d_head wide): multiply by self.W_O to get back to d_model"
)
class HeadNoW_O(_ReferenceHead):
    def forward(self, x, mask=None):
        return scaled_dot_product_attention(x @ self.W_Q, x @ self.W_K, x @ self.W_V)


@bank.mistake(
    "softmax over queries",
    "your softmax runs over the queries: each query's weights over the keys (the last dim) must sum to 1",
)
class HeadSoftmaxOverQueries(_ReferenceHead):
    def forward(self, x, mask=None):
        q, k, v = x @ self.W_Q, x @ self.W_K, x @ self.W_V
        return softmax(_scores(q, k), dim=-2) @ v @ self.W_O


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("einsum")
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


@bank.alternative("F.scaled_dot_product_attention")
class HeadFused(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_Q = nn.Parameter(torch.zeros(d_model, d_head))
        self.W_K = nn.Parameter(torch.zeros(d_model, d_head))
        self.W_V = nn.Parameter(torch.zeros(d_model, d_head))
        self.W_O = nn.Parameter(torch.zeros(d_head, d_model))

    def forward(self, x):
        return F.scaled_dot_product_attention(x @ self.W_Q, x @ self.W_K, x @ self.W_V) @ self.W_O


@bank.alternative("torch.empty + nn.init, scale by torch.rsqrt")
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


@bank.alternative("one stacked W_QKV product, split afterwards")
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


@bank.alternative("nn.Linear layers (PyTorch's storage), default bias")
class HeadLinear(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_Q, self.W_K, self.W_V = (nn.Linear(d_model, d_head) for _ in range(3))  # biases: the check zeroes them
        self.W_O = nn.Linear(d_head, d_model, bias=False)

    def forward(self, x):
        z = F.scaled_dot_product_attention(self.W_Q(x), self.W_K(x), self.W_V(x))  # (..., pos, d_head)
        return self.W_O(z)


ATTENTION_HEAD = Exercise(
    name="attention_head",
    reference=AttentionHead,
    cases=_head_cases,
    run=_run_head,
    compare=compare_or_convention(),
    wants_class=True,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "In __init__, register four nn.Parameter tensors with the names and shapes the text gives (their starting "
        "values do not matter: the check overwrites them). In forward, make queries, keys and values from x.",
        "forward computes scaled dot-product attention (as in the previous exercise) on the head's own "
        "queries, keys and values (rows of x times each "
        "d_model × d_head matrix), followed by one more product with W_O that takes each d_head-wide result "
        "back to d_model. Leading batch dimensions broadcast through every product.",
    ],
)
EXERCISES = {ATTENTION_HEAD.name: ATTENTION_HEAD}


def check_attention_head(cls):
    """Check a student's ``AttentionHead`` class (an ``nn.Module`` built as ``AttentionHead(d_model, d_head)``)."""
    return ATTENTION_HEAD.check(cls)
