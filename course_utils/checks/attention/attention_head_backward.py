"""Exercise ``attention_head_backward(x, W_Q, W_K, W_V, W_O, grad_out)``: the gradients of one head's weights and
input, by hand.

Required form (stated in the notebook): return ``(grad_x, grad_W_Q, grad_W_K, grad_W_V, grad_W_O)``, each of its
tensor's shape, for out = attention(x W_Q, x W_K, x W_V) W_O (no mask) and ``grad_out`` = dL/dout; the student may
call the course's ``sdp_attention_backward`` for the attention step. The reference is
``course_utils.attention.gradients.attention_head_backward``, tested against autograd.
"""

from __future__ import annotations

import math

import torch

from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.attention.gradients import attention_head_backward as _head_backward_reference
from course_utils.attention.gradients import sdp_attention_backward
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise


def attention_head_backward(x, W_Q, W_K, W_V, W_O, grad_out):
    """Reference: the attention step's backward, then the four projections' (weights summed over all rows)."""
    return _head_backward_reference(x, W_Q, W_K, W_V, W_O, grad_out)


def _head_backward_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, x_shape, d_head, dtype in (("d_model = 4, d_head = 2, 3 positions", (3, 4), 2, torch.float64),
                                          ("batch 2 × 5 positions, d_model = 8, d_head = 3 (float32)", (2, 5, 8), 3,
                                           torch.float32)):
        d_model = x_shape[-1]
        weights = [torch.randn(*shape, generator=gen, dtype=dtype) / math.sqrt(shape[0])
                   for shape in ((d_model, d_head),) * 3 + ((d_head, d_model),)]
        x, grad_out = (torch.randn(*x_shape, generator=gen, dtype=dtype) for _ in range(2))
        cases.append(Case(label, (x, *weights, grad_out)))
    return cases


def head_backward_with(x, W_Q, W_K, W_V, W_O, grad_out, *, paths=("q", "k", "v"), reduce="sum", transpose_O=False):
    """The head's backward with one step changed: fewer paths into x, weights averaged, W_O's gradient transposed."""
    q, k, v = x @ W_Q, x @ W_K, x @ W_V
    z = scaled_dot_product_attention(q, k, v)
    grads = dict(zip("qkv", sdp_attention_backward(q, k, v, grad_out @ W_O.T)))
    n = x.reshape(-1, x.shape[-1]).shape[0] if reduce == "mean" else 1
    rows = x.reshape(-1, x.shape[-1])
    grad_W = [rows.T @ grads[p].reshape(-1, W_Q.shape[-1]) / n for p in "qkv"]
    grad_W_O = z.reshape(-1, W_O.shape[0]).T @ grad_out.reshape(-1, W_O.shape[1]) / n
    grad_x = sum(grads[p] @ W.T for p, W in zip("qkv", (W_Q, W_K, W_V)) if p in paths)
    return grad_x, *grad_W, (grad_W_O.T if transpose_O else grad_W_O)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "x's gradient from the queries only",
    "x feeds three products (queries, keys and values), so its gradient is the sum of three terms, one back "
    "through each of W_Q, W_K and W_V",
)
def head_backward_queries_only(x, W_Q, W_K, W_V, W_O, grad_out):
    return head_backward_with(x, W_Q, W_K, W_V, W_O, grad_out, paths=("q",))


@bank.mistake(
    "x's gradient from the values only",
    "your grad_x only follows the values: the queries and keys are made from x too, and their gradients "
    "come back through W_Q and W_K",
)
def head_backward_values_only(x, W_Q, W_K, W_V, W_O, grad_out):
    return head_backward_with(x, W_Q, W_K, W_V, W_O, grad_out, paths=("v",))


@bank.mistake(
    "weight gradients averaged",
    "a weight used on every row collects the SUM of the rows' contributions; dividing by the number of rows "
    "is only right if the loss itself is a mean, and grad_out already carries that",
)
def head_backward_mean(x, W_Q, W_K, W_V, W_O, grad_out):
    return head_backward_with(x, W_Q, W_K, W_V, W_O, grad_out, reduce="mean")


@bank.mistake(
    "W_O's gradient transposed",
    "grad_W_O must have W_O's shape (d_head, d_model): the attention output's rows, transposed, times grad_out",
)
def head_backward_W_O_transposed(x, W_Q, W_K, W_V, W_O, grad_out):
    return head_backward_with(x, W_Q, W_K, W_V, W_O, grad_out, transpose_O=True)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("einsum over the batch and position dims")
def head_backward_einsum(x, W_Q, W_K, W_V, W_O, grad_out):
    q, k, v = (torch.einsum("...pm,md->...pd", x, W) for W in (W_Q, W_K, W_V))
    z = scaled_dot_product_attention(q, k, v)
    grad_q, grad_k, grad_v = sdp_attention_backward(q, k, v, torch.einsum("...pm,dm->...pd", grad_out, W_O))
    x2, g2 = x.reshape(-1, x.shape[-1]), grad_out.reshape(-1, grad_out.shape[-1])
    grad_W = [torch.einsum("nm,nd->md", x2, g.reshape(-1, g.shape[-1])) for g in (grad_q, grad_k, grad_v)]
    grad_x = sum(torch.einsum("...pd,md->...pm", g, W) for g, W in zip((grad_q, grad_k, grad_v), (W_Q, W_K, W_V)))
    return grad_x, *grad_W, torch.einsum("nd,nm->dm", z.reshape(-1, z.shape[-1]), g2)


@bank.alternative("the attention step by hand too, stacked W_QKV")
def head_backward_stacked(x, W_Q, W_K, W_V, W_O, grad_out):
    d_head = W_Q.shape[-1]
    q, k, v = (x @ torch.cat([W_Q, W_K, W_V], dim=1)).split(d_head, dim=-1)
    p = torch.softmax(q @ k.mT / math.sqrt(d_head), dim=-1)
    z = p @ v
    grad_z = grad_out @ W_O.mT
    grad_p = grad_z @ v.mT
    grad_s = p * (grad_p - (grad_p * p).sum(-1, keepdim=True)) / math.sqrt(d_head)
    grad_qkv = torch.cat([grad_s @ k, grad_s.mT @ q, p.mT @ grad_z], dim=-1)  # (..., pos, 3 * d_head)
    grad_W_QKV = x.flatten(0, -2).mT @ grad_qkv.flatten(0, -2)  # (d_model, 3 * d_head)
    grad_x = grad_qkv @ torch.cat([W_Q, W_K, W_V], dim=1).mT
    return grad_x, *grad_W_QKV.split(d_head, dim=1), z.flatten(0, -2).mT @ grad_out.flatten(0, -2)


@bank.alternative("a loop over the batch, float32")
def head_backward_loop(x, W_Q, W_K, W_V, W_O, grad_out):
    xs = x.float().reshape(-1, *x.shape[-2:])  # (batch, pos, d_model), batch 1 for an unbatched x
    gs = grad_out.float().reshape(-1, *grad_out.shape[-2:])
    Ws = [W.float() for W in (W_Q, W_K, W_V, W_O)]
    totals = [torch.zeros_like(W) for W in Ws]
    grad_x = torch.zeros_like(xs)
    for b in range(xs.shape[0]):
        q, k, v = (xs[b] @ W for W in Ws[:3])
        grad_q, grad_k, grad_v = sdp_attention_backward(q, k, v, gs[b] @ Ws[3].T)
        for i, g in enumerate((grad_q, grad_k, grad_v)):
            totals[i] += xs[b].T @ g
            grad_x[b] += g @ Ws[i].T
        totals[3] += scaled_dot_product_attention(q, k, v).T @ gs[b]
    return grad_x.reshape(x.shape), *totals


ATTENTION_HEAD_BACKWARD = Exercise(
    name="attention_head_backward",
    reference=attention_head_backward,
    cases=_head_backward_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Redo the forward pass, keeping q, k, v and the attention output z. Then go back in order: through W_O to "
        "the gradient of z, through the attention step (the previous exercise's function) to q, k and v, and "
        "through the three projections to the weights and to x.",
        "For rows R times a weight W, dL/dW is Rᵀ times the rows' gradients, with every batch and position row "
        "stacked (reshape to (rows, width) first). The same x makes q, k and v, so dL/dx adds three products: "
        "each gradient times its weight, transposed.",
    ],
)
EXERCISES = {ATTENTION_HEAD_BACKWARD.name: ATTENTION_HEAD_BACKWARD}


def check_attention_head_backward(fn):
    """Check a student's ``attention_head_backward(x, W_Q, W_K, W_V, W_O, grad_out)``."""
    return ATTENTION_HEAD_BACKWARD.check(fn)
