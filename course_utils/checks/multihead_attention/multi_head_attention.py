"""Exercise ``MultiHeadAttention``: the student writes ``forward(x, mask=None)`` of a whole multi-head layer.

Required form (stated in the notebook): from scratch, with torch operations only; parameters in the
(n_heads, d_model, d_head) layout (``W_Q``, ``W_K``, ``W_V``; ``W_O`` (n_heads, d_head, d_model);
``b_Q``, ``b_K``, ``b_V`` (n_heads, d_head); ``b_O`` (d_model,)); x and the output (batch, pos, d_model);
``mask`` None or boolean, True = may attend, of shape (q_pos, k_pos) or (batch, q_pos, k_pos). The
check loads the same seeded weights into the student's module and into ``torch.nn.MultiheadAttention``,
the oracle, and compares their outputs. Equivalent storage (``_weights``): ``nn.Linear(d_model, d_model)``
layers named ``W_Q``, ``W_K``, ``W_V``, ``W_O`` (weight = the transposed wide matrix, head h owning
features h·d_head onwards; the bias in the layer or in ``b_Q``...) are accepted; a fused QKV layer, a
tensor of another shape or a missing name fails with one line naming this convention.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.attention import multihead
from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.checks.weights import Slot, compare_or_convention, convention_answer, load_weights
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.masking import causal_mask, padding_mask

F64 = torch.float64
WEIGHT_NAMES = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")


class TorchOracle(multihead.MultiHeadAttention):
    """The reference: ``torch.nn.MultiheadAttention`` holding the same weights (its mask is True = blocked)."""

    def forward(self, x, mask=None):
        torch_mha = multihead.to_torch_mha(self)
        torch_mask = None
        if mask is not None:  # torch wants (q, k) or (batch * n_heads, q, k), True = not allowed
            full = mask.expand(x.shape[0], x.shape[1], x.shape[1])  # (batch, q_pos, k_pos)
            torch_mask = (~full).repeat_interleave(self.n_heads, dim=0)  # (batch * head, q_pos, k_pos)
        out, _ = torch_mha(x, x, x, attn_mask=torch_mask, need_weights=False)
        return out


def _module_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    lengths_mask = causal_mask(5) & padding_mask([5, 3], 5)  # (batch, q_pos, k_pos): a batch with padding
    return [
        Case(
            "d_model=12, 3 heads, causal mask, batch of 2",
            (12, 3, torch.randn(2, 5, 12, generator=gen, dtype=F64), causal_mask(5), seed),
        ),
        Case(
            "d_model=16, 4 heads, no mask", (16, 4, torch.randn(1, 6, 16, generator=gen, dtype=F64), None, seed + 100)
        ),
        Case(
            "d_model=8, 1 head, causal mask",
            (8, 1, torch.randn(2, 3, 8, generator=gen, dtype=F64), causal_mask(3), seed + 200),
        ),
        Case(
            "d_model=12, 2 heads, causal & padding mask of shape (batch, q_pos, k_pos)",
            (12, 2, torch.randn(2, 5, 12, generator=gen, dtype=F64), lengths_mask, seed + 300),
        ),
    ]


def _seeded_weights(d_model: int, n_heads: int, seed: int) -> dict[str, torch.Tensor]:
    """Seeded weights in the (n_heads, d_model, d_head) layout."""
    d_head = d_model // n_heads
    gen = torch.Generator().manual_seed(seed)
    shapes = {
        "W_Q": (n_heads, d_model, d_head),
        "W_K": (n_heads, d_model, d_head),
        "W_V": (n_heads, d_model, d_head),
        "W_O": (n_heads, d_head, d_model),
        "b_Q": (n_heads, d_head),
        "b_K": (n_heads, d_head),
        "b_V": (n_heads, d_head),
        "b_O": (d_model,),
    }
    return {name: torch.randn(shapes[name], generator=gen, dtype=F64) / math.sqrt(d_model) for name in WEIGHT_NAMES}


def _slots(d_model: int, n_heads: int, seed: int) -> list[Slot]:
    """The four projections, each also as the (d_in, d_out) matrix an nn.Linear would hold transposed."""
    w = _seeded_weights(d_model, n_heads, seed)
    slots = [
        # column h * d_head + j of the wide matrix is W_Q[h][:, j]: head-major, as split_heads reads it
        Slot(f"W_{n}", w[f"W_{n}"], w[f"W_{n}"].permute(1, 0, 2).reshape(d_model, -1), "(n_heads, d_model, d_head)",
             f"x @ W_{n}[h]", f"b_{n}", w[f"b_{n}"], "(n_heads, d_head)")
        for n in "QKV"
    ]
    wide_O = w["W_O"].reshape(-1, d_model)  # (n_heads * d_head, d_model): row block h is W_O[h]
    return slots + [Slot("W_O", w["W_O"], wide_O, "(n_heads, d_head, d_model)", "z[h] @ W_O[h], summed over h",
                         "b_O", w["b_O"], "(d_model,)")]


def _run_module(cls, case: Case):
    d_model, n_heads, x, mask, seed = case.args
    module = cls(d_model, n_heads).double()
    problem = load_weights(module, _slots(d_model, n_heads, seed))
    if problem is not None:
        return convention_answer(problem)
    with torch.no_grad():
        return module(x, mask)


# -- a written-out forward, with knobs for the mistakes --------------------------------------------
def _project(x, W, b):
    return torch.einsum("bpm,hmd->bhpd", x, W) + b[:, None, :]  # (batch, head, pos, d_head)


def _heads_mask(mask):
    return mask[:, None] if mask is not None and mask.ndim == 3 else mask  # (batch, 1, q, k) for a 3-d mask


def _attend(module, x, mask, scale, *, mask_on=True, softmax_dim=-1, out_bias=True):
    """A written-out multi-head forward with knobs for the typical mistakes."""
    q, k, v = (_project(x, getattr(module, f"W_{n}"), getattr(module, f"b_{n}")) for n in "QKV")
    scores = q @ k.transpose(-2, -1) * scale  # (batch, head, q_pos, k_pos)
    if mask is not None and mask_on:
        scores = scores.masked_fill(~_heads_mask(mask), float("-inf"))
    z = torch.softmax(scores, dim=softmax_dim) @ v  # (batch, head, q_pos, d_head)
    out = torch.einsum("bhpd,hdm->bpm", z, module.W_O)
    return out + module.b_O if out_bias else out


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "mask ignored",
    "the mask was not applied: before the softmax, set the scores of the keys a query may not see to -inf",
)
class _IgnoresMask(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return _attend(self, x, mask, 1 / math.sqrt(self.d_head), mask_on=False)


@bank.mistake(
    "mask inverted",
    "your mask is the wrong way round: in this course True means 'may attend', "
    "so the False cells are the ones to block",
)
class _InvertedMask(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        mask = None if mask is None else ~mask | torch.eye(x.shape[1], dtype=torch.bool)  # keep rows non-empty
        return _attend(self, x, mask, 1 / math.sqrt(self.d_head))


@bank.mistake("no 1/sqrt(d_head)", "divide the scores q·k by sqrt(d_head) before the softmax")
class _NoScaling(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return _attend(self, x, mask, 1.0)


@bank.mistake("1/sqrt(d_model)", "scale by sqrt(d_head), the width of one head's queries, not sqrt(d_model)")
class _ScalesByDModel(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return _attend(self, x, mask, 1 / math.sqrt(self.d_model))


@bank.mistake(
    "softmax over queries",
    "the softmax runs over the keys (the last axis of the scores), so each query's weights sum to 1",
)
class _SoftmaxOverQueries(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        out = _attend(self, x, mask, 1 / math.sqrt(self.d_head), softmax_dim=-2)
        return torch.nan_to_num(out)


@bank.mistake("no b_O", "you left out the output bias b_O: add it once, after summing the heads' writes")
class _NoOutputBias(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return _attend(self, x, mask, 1 / math.sqrt(self.d_head), out_bias=False)


@bank.mistake(
    "no W_O", "each head's output z goes through its own W_O[h] back to d_model, and the heads' results are summed"
)
class _NoOutputProjection(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return multihead.merge_heads(self.head_outputs(x, mask))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("course attention function")
class CourseAttention(multihead.MultiHeadAttention):
    """Own projections, the course's attention function from notebook 03."""

    def forward(self, x, mask=None):
        q, k, v = (_project(x, getattr(self, f"W_{n}"), getattr(self, f"b_{n}")) for n in "QKV")
        z = scaled_dot_product_attention(q, k, v, _heads_mask(mask))
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O) + self.b_O


@bank.alternative("F.scaled_dot_product_attention")
class TorchSDPA(multihead.MultiHeadAttention):
    """PyTorch's fused kernel, whose boolean attn_mask means True = may attend, as in the course."""

    def forward(self, x, mask=None):
        q, k, v = (_project(x, getattr(self, f"W_{n}"), getattr(self, f"b_{n}")) for n in "QKV")
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=_heads_mask(mask))
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O) + self.b_O


@bank.alternative("wide matrices, -1e9 fill")
class WideMatrices(multihead.MultiHeadAttention):
    """The heads' matrices side by side (PyTorch's storage), then split_heads / merge_heads."""

    def forward(self, x, mask=None):
        d_model = x.shape[-1]
        wide = [torch.cat(list(getattr(self, f"W_{n}")), dim=1) for n in "QKV"]  # (d_model, n_heads * d_head)
        q, k, v = (
            multihead.split_heads(x @ W + getattr(self, f"b_{n}").reshape(-1), self.n_heads)
            for W, n in zip(wide, "QKV")
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~_heads_mask(mask), -1e9)
        z = scores.softmax(dim=-1) @ v
        return multihead.merge_heads(z) @ self.W_O.reshape(d_model, d_model) + self.b_O


@bank.alternative("float32 loop over heads")
class Float32HeadLoop(multihead.MultiHeadAttention):
    """One head at a time, in float32, with torch.rsqrt for the scale."""

    def forward(self, x, mask=None):
        x32, out = x.float(), 0.0
        head_mask = _heads_mask(mask)
        for h in range(self.n_heads):
            q = x32 @ self.W_Q[h].float() + self.b_Q[h].float()  # (batch, pos, d_head)
            k = x32 @ self.W_K[h].float() + self.b_K[h].float()
            v = x32 @ self.W_V[h].float() + self.b_V[h].float()
            scores = (q @ k.transpose(-2, -1)) * torch.rsqrt(torch.tensor(float(q.shape[-1])))
            if head_mask is not None:
                scores = scores.masked_fill(~(head_mask[:, 0] if head_mask.ndim == 4 else head_mask), float("-inf"))
            out = out + (scores.softmax(dim=-1) @ v) @ self.W_O[h].float()
        return out + self.b_O.float()


@bank.alternative("nn.Linear layers named W_Q, W_K, W_V, W_O (PyTorch's storage)")
class LinearLayers(nn.Module):
    """Each projection an nn.Linear(d_model, d_model) with its bias; heads split with view + transpose."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.W_Q, self.W_K, self.W_V, self.W_O = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, mask=None):
        batch, pos, d_model = x.shape
        q, k, v = (
            W(x).view(batch, pos, self.n_heads, -1).transpose(1, 2) for W in (self.W_Q, self.W_K, self.W_V)
        )  # each (batch, head, pos, d_head)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~_heads_mask(mask), float("-inf"))
        z = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(batch, pos, d_model)  # heads side by side
        return self.W_O(z)


MULTI_HEAD_ATTENTION = Exercise(
    name="multi_head_attention",
    reference=TorchOracle,
    cases=_module_cases,
    run=_run_module,
    compare=compare_or_convention(),
    wants_class=True,
    function_name="MultiHeadAttention",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Follow the shapes: x (batch, pos, d_model) and W_Q (n_heads, d_model, d_head) should give q of shape (batch, "
        "n_heads, pos, d_head); then it is notebook 03's attention with two leading axes; then back to d_model.",
        "torch.einsum with the letters b, p, m, h, d names every axis, e.g. batch-pos-model times head-model-dhead to "
        "batch-head-pos-dhead, plus the bias with a position axis inserted. Mask the scores "
        "with -inf where the mask is "
        "False (a 3-d mask needs a head axis), softmax over keys, mix the values, and sum the heads through W_O "
        "with another einsum; add b_O once.",
    ],
)
EXERCISES = {MULTI_HEAD_ATTENTION.name: MULTI_HEAD_ATTENTION}


def check_multi_head_attention(cls):
    """Check a student's ``MultiHeadAttention`` class (its ``forward(x, mask=None)``)."""
    return MULTI_HEAD_ATTENTION.check(cls)
