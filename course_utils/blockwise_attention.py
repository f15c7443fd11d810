"""Attention over blocks of keys with an online softmax: FlashAttention's forward pass, readable.

Covers: ``blockwise_attention(q, k, v, block_size)``, which visits the keys ``block_size`` at a time and
never holds more than a (q_pos, block_size) tile of scores. It keeps, per query, the running maximum
score, the running sum of exponentials (relative to that maximum) and the running weighted sum of values,
rescaling all three whenever a block raises the maximum, and divides at the end. It returns the output
(equal to ``attention.scaled_dot_product_attention``, tested) and each query's log-sum-exp of its scores,
the one number per query that FlashAttention keeps for its backward pass. Any leading (batch, head) dims;
the code follows the inputs' device.

Leaves out: masks, tiling over queries (each query row is independent, so that is only a loop), the
GPU kernel itself (on-chip memory, warps), and the backward pass (``attention_gradients``).
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Float
from torch import Tensor

from course_utils.attention import scaled_dot_product_attention
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
