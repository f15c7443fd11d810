"""Class exercises whose check copies seeded weights into the student's module (03 ``attention_head``,
05 ``multi_head_attention``): a module that stores its weights another way gets a verdict, never an
internal error such as "AttributeError: 'Linear' object has no attribute 'copy_'".

Accepted (the mapping is unambiguous): ``nn.Linear`` layers named ``W_Q``... (the banks' alternatives
prove a layer with its own bias; here, layers without bias beside separate ``b_Q``... tensors).
Refused with one FAILED line naming the exercise's convention: a fused QKV layer (an ``nn.Linear``, a
wide tensor, a wrapped ``nn.MultiheadAttention``), a tensor of another shape, a layer the wrong way
round, a missing bias, something that is not a tensor. The grader (the exercise's ``run`` in the
kernel, here in process) gives the same status and line.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from test_grader_path import InProcessProxy
from torch import nn

from course_utils.checks import get_exercise
from course_utils.checks.core import FAILED, PASSED, Outcome, pristine_copy
from course_utils.checks.multihead_attention.multi_head_attention import LinearLayers
from course_utils.lab.grading.grade import _judge, _outcome

SEEDS = (0, 1)


def _results(exercise, impl) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(the notebook check's (status, message), the grader's) on every case of ``SEEDS``."""
    proxy = InProcessProxy(exercise, impl)
    direct, graded = [], []
    for seed in SEEDS:
        for case in exercise.cases(seed):
            direct.append(exercise.judge(case, Outcome.capture(lambda: exercise.run(impl, pristine_copy(case)))))
            found = _judge(exercise, case, _outcome(exercise, proxy, pristine_copy(case)))
            graded.append((found.status, found.message))
    return direct, graded


# -- notebook 05: MultiHeadAttention(d_model, n_heads) --------------------------------------------
class FusedLinear(nn.Module):
    """nanoGPT's storage: one c_attn layer three times d_model wide."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.c_attn, self.c_proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        b, p, d = x.shape
        q, k, v = (t.view(b, p, self.n_heads, -1).transpose(1, 2) for t in self.c_attn(x).split(d, dim=-1))
        return self.c_proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, p, d))


class WrapsTorchMHA(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x, mask=None):
        return self.mha(x, x, x, attn_mask=None if mask is None else ~mask, need_weights=False)[0]


class SquareParameters(nn.Module):
    """Each projection one (d_model, d_model) tensor: x @ W or x @ W.T? The shape cannot say."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        for n in "QKVO":
            setattr(self, f"W_{n}", nn.Parameter(torch.randn(d_model, d_model)))
            setattr(self, f"b_{n}", nn.Parameter(torch.zeros(d_model)))

    def forward(self, x, mask=None):
        return x @ self.W_O


class LinearWithoutBias(LinearLayers):
    """nn.Linear layers but no bias anywhere: the exercise's b_Q has nowhere to go."""

    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.W_Q, self.W_K, self.W_V, self.W_O = (nn.Linear(d_model, d_model, bias=False) for _ in range(4))


class LinearBesideBiases(nn.Module):
    """Bias-free nn.Linear layers with the exercise's own b_Q, b_K, b_V, b_O tensors beside them."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, d_head = n_heads, d_model // n_heads
        self.W_Q, self.W_K, self.W_V, self.W_O = (nn.Linear(d_model, d_model, bias=False) for _ in range(4))
        self.b_Q, self.b_K, self.b_V = (nn.Parameter(torch.zeros(n_heads, d_head)) for _ in range(3))
        self.b_O = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, mask=None):
        b, p, d = x.shape
        q, k, v = (
            (W(x).view(b, p, self.n_heads, -1) + bias).transpose(1, 2)  # (batch, head, pos, d_head)
            for W, bias in ((self.W_Q, self.b_Q), (self.W_K, self.b_K), (self.W_V, self.b_V))
        )
        mask = None if mask is None else (mask[:, None] if mask.ndim == 3 else mask)
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.W_O(z.transpose(1, 2).reshape(b, p, d)) + self.b_O


MHA_REFUSED = [
    (FusedLinear, ["fused", "`self.c_attn`", "(n_heads, d_model, d_head)", "nn.Linear(12, 12) named W_Q"]),
    (WrapsTorchMHA, ["fused", "`self.mha`", "(n_heads, d_model, d_head)"]),
    (SquareParameters, ["`self.W_Q` has shape (12, 12)", "shape (3, 12, 4) = (n_heads, d_model, d_head)"]),
    (LinearWithoutBias, ["no `b_Q`", "(3, 4) = (n_heads, d_head)"]),
]


# -- notebook 03: AttentionHead(d_model, d_head) --------------------------------------------------
class HeadFusedParameter(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_QKV = nn.Parameter(torch.randn(d_model, 3 * d_head))  # (d_model, 3 * d_head): q, k, v side by side
        self.W_O = nn.Parameter(torch.randn(d_head, d_model))

    def forward(self, x):
        q, k, v = (x @ self.W_QKV).chunk(3, dim=-1)
        return F.scaled_dot_product_attention(q, k, v) @ self.W_O


class HeadFusedLinear(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.qkv, self.out = nn.Linear(d_model, 3 * d_head, bias=False), nn.Linear(d_head, d_model, bias=False)

    def forward(self, x):
        return self.out(F.scaled_dot_product_attention(*self.qkv(x).chunk(3, dim=-1)))


class HeadLinearBackwards(nn.Module):
    """nn.Linear(d_head, d_model) for W_Q: the layer maps the wrong way."""

    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_Q = nn.Linear(d_head, d_model)

    def forward(self, x):
        return x


class HeadTransposedParameters(nn.Module):
    """(d_head, d_model) tensors used as x @ W.T: the transpose of the convention."""

    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_Q, self.W_K, self.W_V = (nn.Parameter(torch.randn(d_head, d_model)) for _ in range(3))
        self.W_O = nn.Parameter(torch.randn(d_model, d_head))

    def forward(self, x):
        return F.scaled_dot_product_attention(x @ self.W_Q.T, x @ self.W_K.T, x @ self.W_V.T) @ self.W_O.T


class HeadListOfWeights(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_Q = [[0.0] * d_head for _ in range(d_model)]

    def forward(self, x):
        return x


class HeadLinearNoBias(nn.Module):
    def __init__(self, d_model, d_head):
        super().__init__()
        self.W_Q, self.W_K, self.W_V = (nn.Linear(d_model, d_head, bias=False) for _ in range(3))
        self.W_O = nn.Linear(d_head, d_model, bias=False)

    def forward(self, x):
        q, k, v = self.W_Q(x), self.W_K(x), self.W_V(x)
        return self.W_O(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v)


HEAD_REFUSED = [
    (HeadFusedParameter, ["fused", "`self.W_QKV`", "shape (4, 2) = (d_model, d_head), used as x @ W_Q"]),
    (HeadFusedLinear, ["fused", "`self.qkv`", "nn.Linear(4, 2) named W_Q is accepted"]),
    (HeadLinearBackwards, ["`self.W_Q` is an nn.Linear(2, 4)", "shape (4, 2) = (d_model, d_head)"]),
    (HeadTransposedParameters, ["`self.W_Q` has shape (2, 4)", "shape (4, 2) = (d_model, d_head)"]),
    (HeadListOfWeights, ["`self.W_Q` is a list", "nn.Parameter of shape (4, 2)"]),
]

REFUSED = [("multi_head_attention", cls, words) for cls, words in MHA_REFUSED] + [
    ("attention_head", cls, words) for cls, words in HEAD_REFUSED
]


@pytest.mark.parametrize("name,cls,words", REFUSED, ids=[cls.__name__ for _, cls, _ in REFUSED])
def test_another_storage_fails_with_the_convention_in_one_line(name, cls, words):
    exercise = get_exercise(name)
    verdict = exercise.check(cls)
    assert verdict.status == FAILED and str(verdict).startswith("❌"), str(verdict)
    assert "\n" not in str(verdict) and "Error" not in verdict.message, str(verdict)
    for phrase in words:
        assert phrase in verdict.message, f"{phrase!r} not in {verdict.message!r}"


ACCEPTED = [("multi_head_attention", LinearBesideBiases), ("attention_head", HeadLinearNoBias)]


@pytest.mark.parametrize("name,cls", ACCEPTED, ids=[cls.__name__ for _, cls in ACCEPTED])
def test_linear_layers_are_loaded_as_the_transposed_matrices(name, cls):
    verdict = get_exercise(name).check(cls)
    assert verdict.passed, str(verdict)


# every case of two seeds, through the grader's round trip too: slow, like tests/test_grader_path.py
@pytest.mark.slow
@pytest.mark.parametrize(
    "name,cls,status",
    [(name, cls, FAILED) for name, cls, _ in REFUSED] + [(name, cls, PASSED) for name, cls in ACCEPTED],
    ids=[cls.__name__ for _, cls, _ in REFUSED] + [cls.__name__ for _, cls in ACCEPTED],
)
def test_the_grader_gives_the_same_status_and_line(name, cls, status):
    direct, graded = _results(get_exercise(name), cls)
    assert {s for s, _ in direct} == {status}, direct
    assert graded == direct, f"the grader says {graded}, the notebook check {direct}"


def test_a_wrong_forward_in_linear_layers_still_fails_on_its_maths():
    """Accepting the storage does not accept the maths: no 1/sqrt(d_head) is caught through nn.Linear too."""

    class Unscaled(HeadLinearNoBias):
        def forward(self, x):
            q, k, v = self.W_Q(x), self.W_K(x), self.W_V(x)
            return self.W_O(torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v)

    verdict = get_exercise("attention_head").check(Unscaled)
    assert verdict.status == FAILED and "not scaled" in verdict.message, str(verdict)
