"""Exercise ``FusedMultiHeadAttention``: the student writes ``__init__`` and ``forward(x)`` of a layer with one
fused projection.

Required form (stated in the notebook): ``FusedMultiHeadAttention(d_model, n_heads, causal=False)`` holding
``W_QKV = nn.Linear(d_model, 3 * d_model)`` (output features q, then k, then v, head h owning features
h·d_head onwards within each: ``nn.MultiheadAttention``'s ``in_proj_weight`` and nanoGPT's ``c_attn``) and
``W_O = nn.Linear(d_model, d_model)``; ``causal=True`` lets each query see only keys at or before it. The
check copies the weights of a seeded ``torch.nn.MultiheadAttention`` (the oracle) into the student's module
(an ``nn.Parameter`` ``W_QKV`` of shape (d_model, 3 * d_model) used as ``x @ W_QKV`` with a ``b_QKV`` is
accepted too) and compares the outputs.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.attention import multihead
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.weights import Slot, compare_or_convention, convention_answer, load_weights
from course_utils.masking import causal_mask

F64 = torch.float64


class TorchOracle(multihead.FusedMultiHeadAttention):
    """The reference: ``torch.nn.MultiheadAttention`` with the same in_proj and out_proj (mask True = blocked)."""

    def forward(self, x):
        torch_mha = nn.MultiheadAttention(self.d_model, self.n_heads, batch_first=True).to(x.dtype)
        with torch.no_grad():
            torch_mha.in_proj_weight.copy_(self.W_QKV.weight)
            torch_mha.in_proj_bias.copy_(self.W_QKV.bias)
            torch_mha.out_proj.weight.copy_(self.W_O.weight)
            torch_mha.out_proj.bias.copy_(self.W_O.bias)
        blocked = ~causal_mask(x.shape[1]) if self.causal else None
        return torch_mha(x, x, x, attn_mask=blocked, need_weights=False)[0]


def _fused_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("d_model=12, 3 heads, causal, batch of 2",
             (12, 3, True, torch.randn(2, 5, 12, generator=gen, dtype=F64), seed)),
        Case("d_model=16, 4 heads, not causal",
             (16, 4, False, torch.randn(1, 6, 16, generator=gen, dtype=F64), seed + 1)),
        Case("d_model=8, 1 head, causal", (8, 1, True, torch.randn(2, 4, 8, generator=gen, dtype=F64), seed + 2)),
    ]


def _slots(d_model: int, seed: int) -> list[Slot]:
    gen = torch.Generator().manual_seed(seed)
    W_QKV = torch.randn(d_model, 3 * d_model, generator=gen, dtype=F64) / math.sqrt(d_model)  # used as x @ W_QKV
    W_O = torch.randn(d_model, d_model, generator=gen, dtype=F64) / math.sqrt(d_model)
    b_QKV = torch.randn(3 * d_model, generator=gen, dtype=F64) / 4
    b_O = torch.randn(d_model, generator=gen, dtype=F64) / 4
    return [
        Slot("W_QKV", W_QKV, W_QKV, "(d_model, 3 * d_model): q, then k, then v", "x @ W_QKV", "b_QKV", b_QKV,
             "(3 * d_model,)"),
        Slot("W_O", W_O, W_O, "(d_model, d_model)", "z @ W_O", "b_O", b_O, "(d_model,)"),
    ]


def _run_module(cls, case: Case):
    d_model, n_heads, causal, x, seed = case.args
    module = cls(d_model, n_heads, causal=causal).double()
    problem = load_weights(module, _slots(d_model, seed))
    if problem is not None:
        return convention_answer(problem)
    with torch.no_grad():
        return module(x)


def _attend(module, q, k, v, causal):
    """(batch, head, pos, d_head) each -> (batch, pos, d_model), through W_O."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        scores = scores.masked_fill(~causal_mask(q.shape[-2]), float("-inf"))
    return module.W_O(multihead.merge_heads(scores.softmax(dim=-1) @ v))


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "q, k, v interleaved per head",
    "W_QKV's outputs are all of q, then all of k, then all of v (d_model each); split them apart first, then cut "
    "each into heads (interleaving q, k, v head by head is GPT-NeoX's layout, not this one)",
)
class _PerHeadOrder(multihead.FusedMultiHeadAttention):
    def forward(self, x):
        batch, pos, _ = x.shape
        qkv = self.W_QKV(x).view(batch, pos, self.n_heads, -1).transpose(1, 2)  # (batch, head, pos, 3 * d_head)
        return _attend(self, *qkv.chunk(3, dim=-1), self.causal)


@bank.mistake(
    "heads cut with a plain reshape",
    "cut each of q, k, v into heads with a reshape of the last axis to (n_heads, d_head) and then a transpose; "
    "reshaping straight to (batch, n_heads, pos, d_head) mixes positions into heads",
)
class _PlainReshape(multihead.FusedMultiHeadAttention):
    def forward(self, x):
        batch, pos, d_model = x.shape
        q, k, v = (t.reshape(batch, self.n_heads, pos, -1) for t in self.W_QKV(x).split(d_model, dim=-1))
        return _attend(self, q, k, v, self.causal)


@bank.mistake("causal ignored", "with causal=True, block every key after the query (-inf before the softmax)")
class _CausalIgnored(multihead.FusedMultiHeadAttention):
    def forward(self, x):
        q, k, v = (multihead.split_heads(t, self.n_heads) for t in self.W_QKV(x).split(self.d_model, dim=-1))
        return _attend(self, q, k, v, False)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.scaled_dot_product_attention with is_causal")
class SDPA(multihead.FusedMultiHeadAttention):
    def forward(self, x):
        batch, pos, d_model = x.shape
        q, k, v = self.W_QKV(x).chunk(3, dim=-1)
        q, k, v = (t.view(batch, pos, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
        z = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.W_O(z.transpose(1, 2).reshape(batch, pos, d_model))


@bank.alternative("one view to (batch, pos, 3, n_heads, d_head) and a permute")
class OnePermute(multihead.FusedMultiHeadAttention):
    def forward(self, x):
        batch, pos, d_model = x.shape
        q, k, v = self.W_QKV(x).view(batch, pos, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
        if self.causal:
            scores = scores.masked_fill(torch.ones(pos, pos, dtype=torch.bool).triu(1), -1e9)
        z = torch.einsum("bhqk,bhkd->bqhd", scores.softmax(dim=-1), v)  # (batch, pos, head, d_head)
        return self.W_O(z.reshape(batch, pos, d_model))


@bank.alternative("float32 nn.Parameter matrices used as x @ W_QKV")
class ParameterMatrices(nn.Module):
    def __init__(self, d_model, n_heads, causal=False):
        super().__init__()
        self.n_heads, self.causal = n_heads, causal
        self.W_QKV = nn.Parameter(torch.randn(d_model, 3 * d_model) / math.sqrt(d_model))
        self.b_QKV = nn.Parameter(torch.zeros(3 * d_model))
        self.W_O = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.b_O = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        x, d_model = x.float(), x.shape[-1]
        qkv = x @ self.W_QKV.float() + self.b_QKV.float()
        q, k, v = (multihead.split_heads(t, self.n_heads) for t in qkv.split(d_model, dim=-1))
        scores = q @ k.mT / math.sqrt(d_model // self.n_heads)
        if self.causal:
            scores = scores.masked_fill(~causal_mask(x.shape[1]), float("-inf"))
        return multihead.merge_heads(scores.softmax(dim=-1) @ v) @ self.W_O.float() + self.b_O.float()


FUSED_MULTI_HEAD_ATTENTION = Exercise(
    name="fused_multi_head_attention",
    reference=TorchOracle,
    cases=_fused_cases,
    run=_run_module,
    compare=compare_or_convention(),
    wants_class=True,
    function_name="FusedMultiHeadAttention",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "One matrix product gives q, k and v side by side, 3 * d_model features per position. Cut that into the "
        "three, cut each into heads as split_heads does, attend, and put the heads back side by side for W_O.",
        "The fused output has 3 * d_model features per position: cut its last axis into three pieces of d_model "
        "(q first). Each piece becomes (batch, n_heads, pos, d_head) by viewing its last axis as (n_heads, d_head) "
        "and swapping the head and position axes. For causal, mask the scores with a lower-triangular boolean "
        "table before the softmax; at the end undo the head split before W_O.",
    ],
)
EXERCISES = {FUSED_MULTI_HEAD_ATTENTION.name: FUSED_MULTI_HEAD_ATTENTION}


def check_fused_multi_head_attention(cls):
    """Check a student's ``FusedMultiHeadAttention`` class (its ``__init__`` and ``forward(x)``)."""
    return FUSED_MULTI_HEAD_ATTENTION.check(cls)
