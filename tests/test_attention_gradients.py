"""The hand-written backward pass of attention against autograd (float64 and float32, batch and head dims),
a hand-worked softmax example, and clear errors on bad input."""

from __future__ import annotations

import pytest
import torch

from course_utils.attention.dot_product import AttentionHead, scaled_dot_product_attention
from course_utils.attention.gradients import attention_head_backward, sdp_attention_backward, softmax_backward
from course_utils.tolerances import tolerance


def _inputs(shape_q, shape_k, d_v, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*shape_q, generator=gen, dtype=dtype)
    k = torch.randn(*shape_k, generator=gen, dtype=dtype)
    v = torch.randn(*shape_k[:-1], d_v, generator=gen, dtype=dtype)
    grad_out = torch.randn(*shape_q[:-1], d_v, generator=gen, dtype=dtype)
    return q, k, v, grad_out


def test_softmax_backward_hand_worked_and_against_autograd():
    # p = (1/2, 1/2), dL/dp = (1, 0): row average 1/2, so dL/ds = (1/2 · 1/2, 1/2 · (−1/2))
    torch.testing.assert_close(softmax_backward(torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0])),
                               torch.tensor([0.25, -0.25]))
    s = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    g = torch.randn(3, 5, dtype=torch.float64)
    (expected,) = torch.autograd.grad(torch.softmax(s, -1), s, g)
    torch.testing.assert_close(softmax_backward(torch.softmax(s, -1).detach(), g), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape_q,shape_k,d_v", [((4, 8), (6, 8), 3), ((2, 3, 5, 16), (2, 3, 7, 16), 4)])
def test_sdp_attention_backward_agrees_with_autograd(dtype, shape_q, shape_k, d_v):
    q, k, v, grad_out = _inputs(shape_q, shape_k, d_v, dtype)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    expected = torch.autograd.grad(scaled_dot_product_attention(*leaves), leaves, grad_out)
    rtol, atol = tolerance(dtype, torch.device("cpu"))
    for got, want in zip(sdp_attention_backward(q, k, v, grad_out), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)


def test_equal_scores_hand_worked():
    # one query, two keys with equal scores: weights (1/2, 1/2), so grad_v = weights × grad_out and the
    # score gradient is p (g − p·g) with g = (1, 0), i.e. (1/4, −1/4); dq = that @ k / sqrt(2)
    q, k = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0], [0.0, 3.0]])
    v, grad_out = torch.tensor([[1.0], [0.0]]), torch.tensor([[1.0]])
    grad_q, grad_k, grad_v = sdp_attention_backward(q, k, v, grad_out)
    torch.testing.assert_close(grad_v, torch.tensor([[0.5], [0.5]]))
    torch.testing.assert_close(grad_q, torch.tensor([[0.0, (0.25 - 0.75) / 2 ** 0.5]]))
    torch.testing.assert_close(grad_k, torch.tensor([[0.25, 0.0], [-0.25, 0.0]]) / 2 ** 0.5)


def test_bad_input_names_the_argument():
    q, k, v, grad_out = _inputs((4, 8), (6, 8), 3, torch.float64)
    with pytest.raises(ValueError, match="grad_out must have the output's shape"):
        sdp_attention_backward(q, k, v, grad_out[:, :2])
    with pytest.raises(ValueError, match="v must have shape"):
        sdp_attention_backward(q, k, v[:5], grad_out)
    with pytest.raises(TypeError, match="grad_out must be a torch.Tensor"):
        sdp_attention_backward(q, k, v, grad_out.tolist())
    with pytest.raises(ValueError, match="grad_p must have p's shape"):
        softmax_backward(torch.ones(2, 3), torch.ones(3, 2))


@pytest.mark.parametrize("x_shape", [(5, 8), (2, 4, 8)])
def test_attention_head_backward_agrees_with_autograd(x_shape):
    torch.manual_seed(0)
    head = AttentionHead(8, 3, init_std=0.5).double()
    x = torch.randn(*x_shape, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(*x_shape, dtype=torch.float64)
    weights = (head.W_Q, head.W_K, head.W_V, head.W_O)
    expected = torch.autograd.grad(head(x), (x, *weights), grad_out)
    got = attention_head_backward(x.detach(), *(w.detach() for w in weights), grad_out)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e)
    with pytest.raises(ValueError, match="W_O must have shape"):
        attention_head_backward(x.detach(), *(w.detach() for w in weights[:3]), weights[3].detach().T, grad_out)
    with pytest.raises(ValueError, match="grad_out must have x's shape"):
        attention_head_backward(x.detach(), *(w.detach() for w in weights), grad_out[..., :3])
