"""Exercise ``to_halves_layout(W)``: reorder a query or key projection from the interleaved RoPE layout to
the rotate-half one.

Required form (stated in the notebook): ``W`` of shape (head, d_model, d_head), even ``d_head``; the result
has the same shape, and per head its output features (the last axis) are the old ones in the order
0, 2, 4, ..., 1, 3, 5, ... (every pair's first feature, then every pair's second). Checked against
``course_utils.llama.to_halves_layout``; a permutation moves numbers without arithmetic, so the check
is exact.
"""

from __future__ import annotations

import random

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.llama.rotary import to_halves_layout as _course_to_halves
from course_utils.llama.rotary import to_interleaved_layout

F64 = torch.float64


def to_halves_layout(W):
    """Reference: per head, output features 0, 2, 4, ... then 1, 3, 5, ..."""
    return _course_to_halves(W)


def _layout_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    shapes = [(2, 8, 6), (3, 6, 8), (4, 5, 4), (1, 4, 12)]
    if seed:  # hidden sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        shapes = [(rng.randint(2, 4), 2 * rng.randint(2, 6), 2 * rng.randint(3, 8)) for _ in range(3)]
        shapes.append((rng.randint(2, 4), 2 * rng.randint(2, 6) + 1, 4))  # an odd d_model
    return [
        Case(f"{h} heads, d_model {m}, d_head {d}", (torch.randn(h, m, d, generator=gen, dtype=F64),))
        for h, m, d in shapes
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("the inverse permutation", "that is the way back (halves to interleaved): new feature j is old feature "
              "2j for the first half and 2(j - d_head/2) + 1 for the second, so the first half holds the even "
              "old features")
def _inverse(W):
    return to_interleaved_layout(W)


@bank.mistake("odd features first", "each pair's first feature (the even old indices 0, 2, 4, ...) comes first, "
              "then the second features (1, 3, 5, ...)")
def _odd_first(W):
    return torch.cat([W[..., 1::2], W[..., 0::2]], dim=-1)


@bank.mistake("d_model permuted", "permute the output features (the last axis, d_head), not the inputs: the rotation "
              "acts on q = x @ W, on the features of each head")
def _inputs_permuted(W):
    return torch.cat([W[:, 0::2], W[:, 1::2]], dim=1)


@bank.mistake("heads mixed", "permute within each head: the heads' features side by side are not one vector, so "
              "the even features of ALL heads must not come first")
def _heads_mixed(W):
    flat = W.permute(1, 0, 2).flatten(1)  # (d_model, head * d_head): the heads side by side
    return torch.cat([flat[:, 0::2], flat[:, 1::2]], dim=1).unflatten(1, (W.shape[0], -1)).permute(1, 0, 2)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("slices and cat")
def _slices(W):
    return torch.cat([W[..., 0::2], W[..., 1::2]], dim=-1)


@bank.alternative("an index tensor")
def _index(W):
    d = W.shape[-1]
    return W[..., torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])]


@bank.alternative("transformers' conversion permute, on the (out, in) weight of an nn.Linear")
def _transformers_permute(W):
    heads, d_model, d_head = W.shape
    weight = W.permute(0, 2, 1).reshape(heads * d_head, d_model)  # (out, in): nn.Linear's layout
    weight = weight.view(heads, d_head // 2, 2, d_model).transpose(1, 2).reshape(heads * d_head, d_model)
    return weight.view(heads, d_head, d_model).transpose(1, 2)


@bank.alternative("a permutation matrix (exact: each output is one input times 1)")
def _matrix(W):
    d = W.shape[-1]
    order = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
    P = torch.eye(d, dtype=W.dtype)[:, order]  # column j picks old feature order[j]
    return torch.einsum("hmd,de->hme", W, P)


ROPE_LAYOUT = Exercise(
    name="rope_layout",
    reference=to_halves_layout,
    cases=_layout_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    function_name="to_halves_layout",
    tolerance="exact",
    hints=[
        "Only the order of each head's output features changes, the last axis: in the interleaved layout the pairs "
        "are neighbours, in the halves layout pair i is feature i and feature i + d_head/2.",
        "Collect the features at even positions of the last axis, then those at odd positions, and put the two "
        "groups one after the other (or view the last axis as (d_head/2, 2) and swap those two axes).",
    ],
)
EXERCISES = {ROPE_LAYOUT.name: ROPE_LAYOUT}


def check_rope_layout(fn):
    """Check a student's ``to_halves_layout(W)``."""
    return ROPE_LAYOUT.check(fn)
