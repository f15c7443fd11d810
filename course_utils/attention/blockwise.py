"""Attention over blocks of keys with an online softmax: FlashAttention's forward pass, readable.

Covers: ``blockwise_attention(q, k, v, block_size)``, which visits the keys ``block_size`` at a time and
never holds more than a (q_pos, block_size) tile of scores. It keeps, per query, the running maximum
score, the running sum of exponentials (relative to that maximum) and the running weighted sum of values,
rescaling all three whenever a block raises the maximum, and divides at the end. It returns the output
(equal to ``attention.scaled_dot_product_attention``, tested) and each query's log-sum-exp of its scores,
the one number per query that FlashAttention keeps for its backward pass. Any leading (batch, head) dims;
the code follows the inputs' device.

``blockwise_attention_backward`` is that backward pass (FlashAttention-2's, readable): from q, k, v, the
output, the log-sum-exp and dL/dout it recomputes each tile of weights as exp(score − lse), never storing
the full pattern, and uses D = rowsum(dL/dout ∘ out), which equals the softmax Jacobian's Σ_j p_j dL/dp_j.
Tested against ``attention_gradients.sdp_attention_backward``.

Leaves out: masks, tiling over queries (each query row is independent, so that is only a loop), and the
GPU kernel itself (on-chip memory, warps).
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Float
from torch import Tensor

from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.validate import positive_int


def blockwise_attention(
    q: Float[Tensor, "... q_pos d_head"],
    k: Float[Tensor, "... k_pos d_head"],
    v: Float[Tensor, "... k_pos d_v"],
    block_size: int,
) -> tuple[Float[Tensor, "... q_pos d_v"], Float[Tensor, "... q_pos"]]:
    """(softmax(q kᵀ / sqrt(d_head)) v, logsumexp of each query's scaled scores), keys visited in blocks.

    One query, keys with scores 0 and 0, values [1] and [3], ``block_size=1``: after the first block the
    output sum is 1 with weight sum 1; the second block adds 3 and 1; the result is ``[[2.]]`` and the
    log-sum-exp is log 2.
    """
    scaled_dot_product_attention(q[..., :1, :], k, v)  # validates q, k and v on one query row
    positive_int("block_size", block_size)
    scale = 1 / math.sqrt(q.shape[-1])
    row_max = q.new_full((*q.shape[:-1], 1), -math.inf)  # (..., q_pos, 1): the largest score seen so far
    row_sum = q.new_zeros((*q.shape[:-1], 1))  # (..., q_pos, 1): Σ exp(score - row_max) so far
    out = q.new_zeros((*q.shape[:-1], v.shape[-1]))  # (..., q_pos, d_v): Σ exp(score - row_max) v so far
    for start in range(0, k.shape[-2], block_size):
        k_block, v_block = k[..., start : start + block_size, :], v[..., start : start + block_size, :]
        scores = q @ k_block.transpose(-2, -1) * scale  # (..., q_pos, block)
        new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))
        rescale = torch.exp(row_max - new_max)  # what was summed under the old maximum, moved to the new one
        weights = torch.exp(scores - new_max)  # (..., q_pos, block)
        row_sum = row_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v_block
        row_max = new_max
    return out / row_sum, (row_max + row_sum.log()).squeeze(-1)


def blockwise_attention_backward(
    q: Float[Tensor, "... q_pos d_head"],
    k: Float[Tensor, "... k_pos d_head"],
    v: Float[Tensor, "... k_pos d_v"],
    out: Float[Tensor, "... q_pos d_v"],
    lse: Float[Tensor, "... q_pos"],
    grad_out: Float[Tensor, "... q_pos d_v"],
    block_size: int,
) -> tuple[Tensor, Tensor, Tensor]:
    """(dL/dq, dL/dk, dL/dv) from the forward's ``out`` and ``lse``, keys visited ``block_size`` at a time.

    Equal to ``attention_gradients.sdp_attention_backward(q, k, v, grad_out)`` (tested); the largest score
    tile held is (q_pos, block_size).
    """
    scaled_dot_product_attention(q[..., :1, :], k, v)  # validates q, k and v on one query row
    positive_int("block_size", block_size)
    if out.shape != grad_out.shape or out.shape != (*q.shape[:-1], v.shape[-1]) or lse.shape != q.shape[:-1]:
        raise ValueError(
            f"out and grad_out must have shape {(*q.shape[:-1], v.shape[-1])} and lse {tuple(q.shape[:-1])}, got "
            f"{tuple(out.shape)}, {tuple(grad_out.shape)} and {tuple(lse.shape)}"
        )
    scale = 1 / math.sqrt(q.shape[-1])
    D = (grad_out * out).sum(dim=-1, keepdim=True)  # (..., q_pos, 1): Σ_j p_j dL/dp_j, from the output alone
    grad_q, grad_k, grad_v = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for start in range(0, k.shape[-2], block_size):
        block = slice(start, start + block_size)
        weights = torch.exp(q @ k[..., block, :].transpose(-2, -1) * scale - lse[..., None])  # (..., q_pos, block)
        grad_v[..., block, :] = weights.transpose(-2, -1) @ grad_out
        grad_scores = weights * (grad_out @ v[..., block, :].transpose(-2, -1) - D) * scale
        grad_q += grad_scores @ k[..., block, :]
        grad_k[..., block, :] = grad_scores.transpose(-2, -1) @ q
    return grad_q, grad_k, grad_v
