"""Exercise ``CausalAttention``: the attention sub-layer of a GPT block, a class the student writes whole.

Required form (stated in the notebook): ``CausalAttention(cfg)`` for a ``GPTConfig``, holding
``W_Q``, ``W_K``, ``W_V`` (n_heads, d_model, d_head), ``W_O`` (n_heads, d_head, d_model), ``b_Q``,
``b_K``, ``b_V`` (n_heads, d_head) and ``b_O`` (d_model,) under exactly these names (those of
``course_utils.gpt.model``, so GPT-2's weights load); ``forward(x)`` maps (batch, pos, d_model) to the same
shape, causal without being given a mask. The check loads a course block's attention weights into it
and compares with ``course_utils.attention.multihead.MultiHeadAttention`` run with ``causal_mask(pos)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.small_gpt._cases import F64, tiny_model
from course_utils.checks.small_gpt._classes import course_state, run_class
from course_utils.checks.weights import compare_or_convention
from course_utils.masking import causal_mask
from course_utils.attention.multihead import MultiHeadAttention, merge_heads


class CausalAttention(MultiHeadAttention):
    """Reference: notebook 05's multi-head attention, with the causal mask of notebook 04."""

    def __init__(self, cfg):
        super().__init__(cfg.d_model, cfg.n_heads, bias=cfg.bias)

    def forward(self, x):
        return super().forward(x, mask=causal_mask(x.shape[1], device=x.device))


def _attention_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    model = tiny_model(seed)
    return [
        Case(
            f"{name}, d_model 16, 2 heads, {batch} x {pos} positions",
            (model.cfg, course_state(model.blocks[layer].attn), torch.randn(batch, pos, 16, generator=gen, dtype=F64)),
        )
        for name, layer, batch, pos in (("block 0's weights", 0, 2, 6), ("block 1's weights", 1, 1, 9))
    ]


def _qkv(module, x):
    return [torch.einsum("bpm,hmd->bhpd", x, getattr(module, f"W_{n}")) + getattr(module, f"b_{n}")[:, None]
            for n in "QKV"]  # each (batch, head, pos, d_head)


def _attend(module, x, *, scale=None, causal=True, softmax_dim=-1, mask_after=False, W_O=True):
    """A written-out causal attention with knobs for the typical mistakes."""
    q, k, v = _qkv(module, x)
    scores = q @ k.transpose(-2, -1) * (scale or 1 / math.sqrt(q.shape[-1]))  # (batch, head, q_pos, k_pos)
    allowed = causal_mask(x.shape[1])
    if causal and not mask_after:
        scores = scores.masked_fill(~allowed, float("-inf"))
    pattern = scores.softmax(dim=softmax_dim).nan_to_num()
    if mask_after:
        pattern = pattern * allowed
    z = pattern @ v  # (batch, head, q_pos, d_head)
    if not W_O:
        return merge_heads(z)
    return torch.einsum("bhpd,hdm->bpm", z, module.W_O) + module.b_O


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("not causal", "mask the scores so that a position sees itself and earlier positions, never later ones")
class _NotCausal(CausalAttention):
    def forward(self, x):
        return _attend(self, x, causal=False)


@bank.mistake(
    "masked after the softmax",
    "mask the scores (to -inf) BEFORE the softmax: zeroing weights afterwards leaves rows that no longer sum to 1",
)
class _MaskAfterSoftmax(CausalAttention):
    def forward(self, x):
        return _attend(self, x, mask_after=True)


@bank.mistake("1/sqrt(d_model)", "scale the scores by 1/sqrt(d_head), the width of one head's queries")
class _ScaleByDModel(CausalAttention):
    def forward(self, x):
        return _attend(self, x, scale=1 / math.sqrt(x.shape[-1]))


@bank.mistake(
    "softmax over queries", "the softmax runs over the keys (the last axis), so each query's weights sum to 1"
)
class _SoftmaxOverQueries(CausalAttention):
    def forward(self, x):
        return _attend(self, x, softmax_dim=-2)


@bank.mistake("no W_O", "each head's output goes back to d_model through its own W_O[h]; sum the heads, add b_O")
class _NoOutputProjection(CausalAttention):
    def forward(self, x):
        return _attend(self, x, W_O=False)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.scaled_dot_product_attention(is_causal=True)")
class _TorchSDPA(CausalAttention):
    def forward(self, x):
        z = F.scaled_dot_product_attention(*_qkv(self, x), is_causal=True)
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O) + self.b_O


@bank.alternative("course attention function, W_O as one wide matrix")
class _CourseFunction(CausalAttention):
    def forward(self, x):
        z = scaled_dot_product_attention(*_qkv(self, x), causal_mask(x.shape[1]))
        return merge_heads(z) @ self.W_O.reshape(-1, x.shape[-1]) + self.b_O  # (batch, pos, n_heads·d_head) @ wide


@bank.alternative("nanoGPT's mask: a lower-triangular buffer built once, registered with persistent=False")
class _MaskBuffer(CausalAttention):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.register_buffer("tril", torch.ones(cfg.n_ctx, cfg.n_ctx, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x):
        q, k, v = _qkv(self, x)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~self.tril[: x.shape[1], : x.shape[1]],
                                                                             float("-inf"))
        return torch.einsum("bhpd,hdm->bpm", scores.softmax(-1) @ v, self.W_O) + self.b_O


@bank.alternative("float32 loop over heads, -1e9 fill")
class _HeadLoop(CausalAttention):
    def forward(self, x):
        x32, out = x.float(), 0.0
        upper = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), diagonal=1)
        for h in range(self.n_heads):
            q, k, v = (x32 @ getattr(self, f"W_{n}")[h].float() + getattr(self, f"b_{n}")[h].float() for n in "QKV")
            scores = (q @ k.mT / math.sqrt(q.shape[-1])).masked_fill(upper, -1e9)
            out = out + scores.softmax(-1) @ v @ self.W_O[h].float()
        return out + self.b_O.float()


CAUSAL_ATTENTION = Exercise(
    name="causal_attention",
    reference=CausalAttention,
    cases=_attention_cases,
    run=run_class,
    compare=compare_or_convention(),
    wants_class=True,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "It is notebook 05's multi-head attention with the mask built inside: q, k and v for every head, scores "
        "scaled by the head width, a causal mask, softmax over keys, mix the values, then every head back to "
        "d_model and summed.",
        "The mask depends only on the number of positions, x.shape[1]: build it there (notebook 04's causal_mask, on "
        "x's device) and fill the forbidden scores with -inf before the softmax. einsum with letters b, p, m, h, d "
        "names every axis of the projections.",
    ],
)
EXERCISES = {CAUSAL_ATTENTION.name: CAUSAL_ATTENTION}


def check_causal_attention(cls):
    """Check a student's ``CausalAttention`` class (built with a GPTConfig, its ``forward(x)``)."""
    return CAUSAL_ATTENTION.check(cls)
