"""Exercise ``GroupedQueryAttention``: the student writes ``__init__`` and ``forward(x, mask=None)``.

Required form (stated in the notebook): ``GroupedQueryAttention(d_model, n_heads, n_kv_heads)`` with
parameters ``W_Q`` (n_heads, d_model, d_head), ``W_K`` and ``W_V`` (n_kv_heads, d_model, d_head), ``W_O``
(n_heads, d_head, d_model), no biases; query head h reads key/value head h // (n_heads // n_kv_heads);
``mask`` None or a torch.bool tensor, True = may attend, of shape (q_pos, k_pos) or (batch, q_pos, k_pos)
(the latter given a head axis). The check loads seeded weights by
name (an ``nn.Linear`` named ``W_K`` of the right size is accepted too) and compares with PyTorch's
``scaled_dot_product_attention(..., enable_gqa=True)``, the oracle.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.weights import Slot, compare_or_convention, convention_answer, load_weights
from course_utils.attention.grouped_query import GroupedQueryAttention
from course_utils.masking import causal_mask, padding_mask

F64 = torch.float64


class TorchGQA(GroupedQueryAttention):
    """The reference: PyTorch's fused attention, told to share each key/value head with its group."""

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=_heads_mask(mask), enable_gqa=True)
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O)


def _gqa_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("d_model=24, 6 query heads, 2 key/value heads, causal mask, batch of 2",
             (24, 6, 2, torch.randn(2, 5, 24, generator=gen, dtype=F64), causal_mask(5), seed)),
        Case("d_model=16, 4 query heads, 2 key/value heads, no mask",
             (16, 4, 2, torch.randn(1, 6, 16, generator=gen, dtype=F64), None, seed + 100)),
        Case("d_model=16, 4 query heads, 1 key/value head (multi-query), causal mask",
             (16, 4, 1, torch.randn(2, 4, 16, generator=gen, dtype=F64), causal_mask(4), seed + 200)),
        Case("d_model=12, 3 query heads, 3 key/value heads (ordinary multi-head), causal mask",
             (12, 3, 3, torch.randn(1, 5, 12, generator=gen, dtype=F64), causal_mask(5), seed + 300)),
        Case("d_model=16, 4 query heads, 2 key/value heads, causal & padding mask of shape (batch, q_pos, k_pos)",
             (16, 4, 2, torch.randn(2, 5, 16, generator=gen, dtype=F64), causal_mask(5) & padding_mask([5, 3], 5),
              seed + 400)),
    ]


def _slots(d_model: int, n_heads: int, n_kv_heads: int, seed: int) -> list[Slot]:
    d_head = d_model // n_heads
    gen = torch.Generator().manual_seed(seed)
    slots = []
    for name, heads in (("W_Q", n_heads), ("W_K", n_kv_heads), ("W_V", n_kv_heads)):
        value = torch.randn(heads, d_model, d_head, generator=gen, dtype=F64) / math.sqrt(d_model)
        words = f"({'n_heads' if name == 'W_Q' else 'n_kv_heads'}, d_model, d_head)"
        slots.append(Slot(name, value, value.permute(1, 0, 2).reshape(d_model, -1), words, f"x @ {name}[h]"))
    W_O = torch.randn(n_heads, d_head, d_model, generator=gen, dtype=F64) / math.sqrt(d_model)
    return slots + [Slot("W_O", W_O, W_O.reshape(-1, d_model), "(n_heads, d_head, d_model)", "z[h] @ W_O[h], summed")]


def _run_module(cls, case: Case):
    d_model, n_heads, n_kv_heads, x, mask, seed = case.args
    module = cls(d_model, n_heads, n_kv_heads).double()
    problem = load_weights(module, _slots(d_model, n_heads, n_kv_heads, seed))
    if problem is not None:
        return convention_answer(problem)
    with torch.no_grad():
        return module(x, mask)


def _heads_mask(mask):
    return mask[:, None] if mask is not None and mask.ndim == 3 else mask  # (batch, 1, q, k) for a 3-d mask


def _attend(q, k, v, W_O, mask, scale):
    scores = q @ k.transpose(-2, -1) * scale  # (batch, head, q_pos, k_pos)
    if mask is not None:
        scores = scores.masked_fill(~_heads_mask(mask), float("-inf"))
    return torch.einsum("bhpd,hdm->bpm", scores.softmax(dim=-1) @ v, W_O)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "groups interleaved (repeat, not repeat_interleave)",
    "query head h belongs to the group of consecutive heads h // (n_heads // n_kv_heads): copy each key/value "
    "head next to itself ([a, a, b, b]), not the whole stack again ([a, b, a, b])",
)
class _Tiled(GroupedQueryAttention):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        group = self.n_heads // self.n_kv_heads
        k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)  # (batch, n_heads, pos, d_head), tiled
        return _attend(q, k, v, self.W_O, mask, 1 / math.sqrt(self.d_head))


@bank.mistake(
    "query heads averaged per group",
    "every query head keeps its own pattern and output: share the keys and values, not the queries",
)
class _QueriesAveraged(GroupedQueryAttention):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        group = self.n_heads // self.n_kv_heads
        q = q.unflatten(1, (self.n_kv_heads, group)).mean(dim=2, keepdim=True).expand(-1, -1, group, -1, -1)
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        return _attend(q.flatten(1, 2), k, v, self.W_O, mask, 1 / math.sqrt(self.d_head))


@bank.mistake("1/sqrt(d_model)", "scale the scores by 1/sqrt(d_head), the width of one head, not 1/sqrt(d_model)")
class _ScaledByDModel(GroupedQueryAttention):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        group = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        return _attend(q, k, v, self.W_O, mask, 1 / math.sqrt(self.d_model))


@bank.mistake("mask ignored", "apply the mask: before the softmax, set the scores where it is False to -inf")
class _MaskIgnored(GroupedQueryAttention):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        group = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        return _attend(q, k, v, self.W_O, None, 1 / math.sqrt(self.d_head))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("a group axis on the queries, no copies of K and V")
class GroupAxis(GroupedQueryAttention):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        q = q.unflatten(1, (self.n_kv_heads, -1))  # (batch, kv_head, group, pos, d_head)
        scores = torch.einsum("bkgqd,bkpd->bkgqp", q, k) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(~(mask[:, None, None] if mask.ndim == 3 else mask), float("-inf"))
        z = torch.einsum("bkgqp,bkpd->bkgqd", scores.softmax(dim=-1), v).flatten(1, 2)  # (batch, head, pos, d_head)
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O)


@bank.alternative("expand and reshape, F.scaled_dot_product_attention")
class ExpandReshape(GroupedQueryAttention):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        batch, n_kv, pos, d_head = k.shape
        group = self.n_heads // n_kv
        k, v = (t[:, :, None].expand(batch, n_kv, group, pos, d_head).reshape(batch, -1, pos, d_head) for t in (k, v))
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=_heads_mask(mask))
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O)


@bank.alternative("float32 loop over query heads, nn.Linear layers")
class LinearHeadLoop(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.d_head = n_heads, n_kv_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.W_V = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        x, d = x.float(), self.d_head
        q, k, v = (F.linear(x, W.weight.float()) for W in (self.W_Q, self.W_K, self.W_V))
        outs = []
        for h in range(self.n_heads):
            g = h // (self.n_heads // self.n_kv_heads)
            scores = q[..., h * d:(h + 1) * d] @ k[..., g * d:(g + 1) * d].mT / d**0.5
            if mask is not None:
                scores = scores.masked_fill(~mask, -1e9)
            outs.append(scores.softmax(dim=-1) @ v[..., g * d:(g + 1) * d])
        return F.linear(torch.cat(outs, dim=-1), self.W_O.weight.float())


GROUPED_QUERY_ATTENTION = Exercise(
    name="grouped_query_attention",
    reference=TorchGQA,
    cases=_gqa_cases,
    run=_run_module,
    compare=compare_or_convention(),
    wants_class=True,
    function_name="GroupedQueryAttention",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Only the key and value projections shrink: W_K and W_V have n_kv_heads heads. After projecting, give every "
        "query head the key/value head of its group; from there it is the multi-head attention you wrote above.",
        "The group size is n_heads // n_kv_heads, and query heads 0..group-1 share key/value head 0. "
        "repeat_interleave along the head axis copies each key/value head group times, next to itself "
        "(repeat would tile the whole stack instead).",
    ],
)
EXERCISES = {GROUPED_QUERY_ATTENTION.name: GROUPED_QUERY_ATTENTION}


def check_grouped_query_attention(cls):
    """Check a student's ``GroupedQueryAttention`` class (its ``__init__`` and ``forward(x, mask=None)``)."""
    return GROUPED_QUERY_ATTENTION.check(cls)
