"""Blockwise (online-softmax) attention against the course's attention and torch.logsumexp, for block sizes
that do and do not divide the keys, large scores, and bad input."""

from __future__ import annotations

import pytest
import torch

from course_utils.attention.dot_product import attention_scores, scaled_dot_product_attention
from course_utils.attention.gradients import sdp_attention_backward
from course_utils.attention.blockwise import blockwise_attention, blockwise_attention_backward


@pytest.mark.parametrize("block_size", [1, 3, 7, 100])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equals_full_attention_and_logsumexp(block_size, dtype):
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 5, 8, generator=gen, dtype=dtype), torch.randn(2, 3, 7, 8, generator=gen, dtype=dtype)
    v = torch.randn(2, 3, 7, 4, generator=gen, dtype=dtype)
    out, lse = blockwise_attention(q, k, v, block_size)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {}
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, v), **tol)
    torch.testing.assert_close(lse, torch.logsumexp(attention_scores(q, k), dim=-1), **tol)


def test_hand_worked_and_large_scores():
    out, lse = blockwise_attention(torch.zeros(1, 2), torch.zeros(2, 2), torch.tensor([[1.0], [3.0]]), 1)
    torch.testing.assert_close(out, torch.tensor([[2.0]]))
    torch.testing.assert_close(lse, torch.tensor([0.6931472]))
    q = torch.tensor([[100.0, 0.0]]) * 30  # scores in the thousands: exp would overflow without the running max
    k = torch.tensor([[1.0, 0.0], [0.9, 0.0], [1.1, 0.0]])
    out, _ = blockwise_attention(q, k, torch.eye(3), 2)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, torch.eye(3)))


def test_bad_input_names_the_argument():
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        blockwise_attention(q, q, q, 0)
    with pytest.raises(ValueError, match="k and v must have the same number of positions"):
        blockwise_attention(q, q, torch.randn(2, 4), 2)


@pytest.mark.parametrize("block_size", [1, 3, 7])
def test_backward_equals_the_full_backward(block_size):
    gen = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 5, 8, generator=gen, dtype=torch.float64), torch.randn(2, 7, 8, generator=gen, dtype=torch.float64)
    v, grad_out = torch.randn(2, 7, 3, generator=gen, dtype=torch.float64), torch.randn(2, 5, 3, generator=gen, dtype=torch.float64)
    out, lse = blockwise_attention(q, k, v, block_size)
    got = blockwise_attention_backward(q, k, v, out, lse, grad_out, block_size)
    for g, e in zip(got, sdp_attention_backward(q, k, v, grad_out), strict=True):
        torch.testing.assert_close(g, e)
    with pytest.raises(ValueError, match="lse"):
        blockwise_attention_backward(q, k, v, out, lse[..., :2], grad_out, block_size)
