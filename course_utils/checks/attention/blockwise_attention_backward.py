"""Exercise ``blockwise_attention_backward(q, k, v, out, lse, grad_out, block_size)``: FlashAttention-2's backward.

Required form (stated in the notebook): return ``(grad_q, grad_k, grad_v)`` for attention without a mask, visiting
the keys ``block_size`` at a time and recomputing each tile of weights from ``lse`` (the forward's log-sum-exp of
each query's scaled scores), with D = rowsum(grad_out ∘ out). ``out`` and ``lse`` are the forward's, given. Every
case has a number of keys that ``block_size`` does not divide. The reference is
``course_utils.attention.blockwise.blockwise_attention_backward``, tested against the full backward pass.
"""

from __future__ import annotations

import math

import torch

from course_utils.attention.blockwise import blockwise_attention
from course_utils.attention.blockwise import blockwise_attention_backward as _backward_reference
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise


def blockwise_attention_backward(q, k, v, out, lse, grad_out, block_size):
    """Reference: D = rowsum(grad_out ∘ out); per key block, weights = exp(scaled scores − lse), then the grads."""
    return _backward_reference(q, k, v, out, lse, grad_out, block_size)


def _backward_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)

    def make(*shape, dtype=torch.float64):
        return torch.randn(*shape, generator=gen, dtype=dtype)

    cases = []
    for label, q, k, v, block_size in (
        ("4 queries, 10 keys, d_head = 8, block_size = 4", make(4, 8), make(10, 8), make(10, 3), 4),
        ("batch 2, 3 heads, 5 queries, 7 keys, d_head = 16, block_size = 3 (float32)",
         make(2, 3, 5, 16, dtype=torch.float32), make(2, 3, 7, 16, dtype=torch.float32),
         make(2, 3, 7, 4, dtype=torch.float32), 3),
    ):
        out, lse = blockwise_attention(q, k, v, block_size)
        grad_out = make(*out.shape, dtype=q.dtype)
        cases.append(Case(f"{label}, random grad_out", (q, k, v, out, lse, grad_out, block_size)))
    return cases


def backward_with(q, k, v, out, lse, grad_out, block_size, *, D_from="output", accumulate_q=True, use_lse=True,
                  scale_grads=True):
    """FlashAttention-2's backward with one step changed (each keyword names what a mistake does differently)."""
    scale = 1 / math.sqrt(q.shape[-1])
    D = (grad_out * out).sum(-1, keepdim=True)
    grad_q, grad_k, grad_v = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for start in range(0, k.shape[-2], block_size):
        b = slice(start, start + block_size)
        s = q @ k[..., b, :].transpose(-2, -1) * scale
        p = torch.exp(s - lse[..., None]) if use_lse else torch.softmax(s, dim=-1)
        grad_p = grad_out @ v[..., b, :].transpose(-2, -1)
        d = (grad_p * p).sum(-1, keepdim=True) if D_from == "tile" else D
        grad_s = p * (grad_p - d) * (scale if scale_grads else 1.0)
        grad_v[..., b, :] = p.transpose(-2, -1) @ grad_out
        grad_q = grad_q + grad_s @ k[..., b, :] if accumulate_q else grad_s @ k[..., b, :]
        grad_k[..., b, :] = grad_s.transpose(-2, -1) @ q
    return grad_q, grad_k, grad_v


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "grad_q overwritten by each block",
    "grad_q holds only the last block's share: every block of keys contributes to every query's gradient, so "
    "add each block's share to grad_q (grad_k and grad_v, one block each, are written once)",
)
def blockwise_backward_overwrites_q(q, k, v, out, lse, grad_out, block_size):
    return backward_with(q, k, v, out, lse, grad_out, block_size, accumulate_q=False)


@bank.mistake(
    "softmax of one tile",
    "your weights are a softmax over one block only: the tile's weights are exp(scaled score − lse), normalised "
    "over ALL keys through the forward's log-sum-exp",
)
def blockwise_backward_tile_softmax(q, k, v, out, lse, grad_out, block_size):
    return backward_with(q, k, v, out, lse, grad_out, block_size, use_lse=False)


@bank.mistake(
    "correction term from one tile",
    "the softmax's correction term is a sum over all keys of the row, not over one block: compute it once, as "
    "D = rowsum(grad_out ∘ out), before the loop",
)
def blockwise_backward_tile_D(q, k, v, out, lse, grad_out, block_size):
    return backward_with(q, k, v, out, lse, grad_out, block_size, D_from="tile")


@bank.mistake(
    "no scale in dq and dk",
    "grad_v looks right but grad_q and grad_k are too large: the score gradient carries the 1/sqrt(d_head) of "
    "the forward's scores",
)
def blockwise_backward_unscaled(q, k, v, out, lse, grad_out, block_size):
    return backward_with(q, k, v, out, lse, grad_out, block_size, scale_grads=False)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("D from a first pass over the blocks (rowsum of dP ∘ P)")
def blockwise_backward_two_passes(q, k, v, out, lse, grad_out, block_size):
    scale = q.shape[-1] ** -0.5
    tiles = [(k_b, v_b, torch.exp(q @ k_b.mT * scale - lse[..., None]))
             for k_b, v_b in zip(k.split(block_size, -2), v.split(block_size, -2))]
    D = sum(((grad_out @ v_b.mT) * p).sum(-1, keepdim=True) for _, v_b, p in tiles)
    grad_q, grads_k, grads_v = torch.zeros_like(q), [], []
    for k_b, v_b, p in tiles:
        grad_s = p * (grad_out @ v_b.mT - D) * scale
        grad_q = grad_q + grad_s @ k_b
        grads_k.append(grad_s.mT @ q)
        grads_v.append(p.mT @ grad_out)
    return grad_q, torch.cat(grads_k, dim=-2), torch.cat(grads_v, dim=-2)


@bank.alternative("einsum, scale folded into q")
def blockwise_backward_einsum(q, k, v, out, lse, grad_out, block_size):
    q_s = q / math.sqrt(q.shape[-1])
    D = torch.einsum("...qe,...qe->...q", grad_out, out)[..., None]
    grad_q, grad_k, grad_v = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for start in range(0, k.shape[-2], block_size):
        b = slice(start, start + block_size)
        p = (torch.einsum("...qd,...kd->...qk", q_s, k[..., b, :]) - lse[..., None]).exp()
        grad_v[..., b, :] = torch.einsum("...qk,...qe->...ke", p, grad_out)
        grad_s = p * (torch.einsum("...qe,...ke->...qk", grad_out, v[..., b, :]) - D)
        grad_q += torch.einsum("...qk,...kd->...qd", grad_s, k[..., b, :]) / math.sqrt(q.shape[-1])
        grad_k[..., b, :] = torch.einsum("...qk,...qd->...kd", grad_s, q_s)
    return grad_q, grad_k, grad_v


@bank.alternative("float32 arithmetic, while loop")
def blockwise_backward_float32(q, k, v, out, lse, grad_out, block_size):
    q32, k32, v32, o32, l32, g32 = (t.float() for t in (q, k, v, out, lse, grad_out))
    scale = 1 / math.sqrt(q.shape[-1])
    D = (g32 * o32).sum(-1, keepdim=True)
    grad_q, grad_k, grad_v = torch.zeros_like(q32), torch.zeros_like(k32), torch.zeros_like(v32)
    start = 0
    while start < k.shape[-2]:
        end = min(start + block_size, k.shape[-2])
        p = torch.exp(q32 @ k32[..., start:end, :].transpose(-1, -2) * scale - l32.unsqueeze(-1))
        grad_v[..., start:end, :] = p.transpose(-1, -2) @ g32
        grad_s = p * (g32 @ v32[..., start:end, :].transpose(-1, -2) - D) * scale
        grad_q += grad_s @ k32[..., start:end, :]
        grad_k[..., start:end, :] = grad_s.transpose(-1, -2) @ q32
        start = end
    return grad_q, grad_k, grad_v


BLOCKWISE_ATTENTION_BACKWARD = Exercise(
    name="blockwise_attention_backward",
    reference=blockwise_attention_backward,
    cases=_backward_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Same formulas as sdp_attention_backward, reorganised by blocks of keys: the weights of a tile come back "
        "from the scores and the forward's log-sum-exp, and the softmax's row sum comes from out and grad_out, "
        "so no full row is ever needed.",
        "Before the loop: D = rowsum(grad_out ∘ out) and zero gradients. For each block of keys: weights = exp(scaled "
        "scores − lse); that block's grad_v is weightsᵀ grad_out; the score gradient is weights ∘ (grad_out vᵀ − D) "
        "times the scale; add its product with the block's keys to grad_q, and write its transpose times q into "
        "the block's rows of grad_k.",
    ],
)
EXERCISES = {BLOCKWISE_ATTENTION_BACKWARD.name: BLOCKWISE_ATTENTION_BACKWARD}


def check_blockwise_attention_backward(fn):
    """Check a student's ``blockwise_attention_backward(q, k, v, out, lse, grad_out, block_size)``."""
    return BLOCKWISE_ATTENTION_BACKWARD.check(fn)
