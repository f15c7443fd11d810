"""The small GPT's fast path: the same maths as its readable modules, through PyTorch's fused kernels.

Covers ``fused_qkv`` (Q, K and V of every head in one matmul over ``W_Q``, ``W_K``, ``W_V`` side by
side), ``fused_out`` (the heads through ``W_O`` as one matrix), ``fused_attention`` (those two around
``F.scaled_dot_product_attention``; the reference is ``MultiHeadAttention`` of notebook 05),
``fused_mlp`` (the reference is notebook 06's ``MLP``), the pre-norm block in as few kernels as
possible (the reference is ``gpt.Block.forward``), which ``GPT(..., impl="fused")`` trains with, and
``fused_sequence_loss`` (the reference is ``training.sequence_loss``).
Each reads the modules' own parameters and gives the same numbers up to float rounding, gradients
too (tests/test_gpt.py). ``generation.py`` reuses the pieces for its fused KV-cache step.
Leaves out the model's structure and its readable forward (``gpt.py``), dropout and mixed precision.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from course_utils.mlp import MLP
from course_utils.attention.multihead import MultiHeadAttention

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda h: F.gelu(h, approximate="tanh")}


def _qkv_weight(attn: MultiHeadAttention) -> tuple[Tensor, Tensor | None]:
    """W_Q, W_K, W_V side by side as one (d_model, 3·head·d_head) matrix, and their biases as one row.

    Columns: Q of head 0, 1, ..., then K, then V. One copy (the three read as (d_model, head, d_head)).
    """
    W_QKV = torch.cat([W.transpose(0, 1) for W in (attn.W_Q, attn.W_K, attn.W_V)], dim=1)  # (d_model, 3·head, d_head)
    W_QKV = W_QKV.view(attn.d_model, -1)  # (d_model, 3·head·d_head)
    b_QKV = None if attn.b_Q is None else torch.cat([attn.b_Q, attn.b_K, attn.b_V]).reshape(-1)
    return W_QKV, b_QKV


def _linear(x: Tensor, W: Tensor, b: Tensor | None) -> Tensor:
    """``x @ W + b`` for a 2-d ``x``, in one kernel (``addmm``) when there is a bias."""
    return x @ W if b is None else torch.addmm(b, x, W)


def fused_qkv(attn: MultiHeadAttention, x: Float[Tensor, "batch pos d_model"]):
    """q, k, v of every head in one matmul over the module's W_Q, W_K, W_V side by side:
    3 × (batch, head, pos, d_head)."""
    batch, pos, d_model = x.shape
    W_QKV, b_QKV = _qkv_weight(attn)
    qkv = _linear(x.reshape(-1, d_model), W_QKV, b_QKV)  # (batch·pos, 3·head·d_head)
    return qkv.reshape(batch, pos, 3, attn.n_heads, -1).permute(2, 0, 3, 1, 4)  # (3, batch, head, pos, d_head)


def fused_out(
    attn: MultiHeadAttention, z: Float[Tensor, "batch head pos d_head"]
) -> Float[Tensor, "batch pos d_model"]:
    """The heads' outputs side by side, through W_O seen as one (head·d_head, d_model) matrix, plus b_O."""
    batch, _, pos, _ = z.shape
    out = _linear(z.transpose(1, 2).reshape(batch * pos, attn.d_model), attn.W_O.reshape(-1, attn.d_model), attn.b_O)
    return out.reshape(batch, pos, attn.d_model)


def fused_attention(
    attn: MultiHeadAttention, x: Float[Tensor, "batch pos d_model"]
) -> Float[Tensor, "batch pos d_model"]:
    """Causal ``attn(x)`` in three kernels: one matmul for Q, K and V, PyTorch's fused attention, one for W_O.

    Same numbers as ``attn(x, causal_mask(pos))`` (tested); it reads the module's own parameters.
    """
    q, k, v = fused_qkv(attn, x)
    return fused_out(attn, F.scaled_dot_product_attention(q, k, v, is_causal=True))  # (batch, pos, d_model)


def fused_mlp(mlp: MLP, x: Float[Tensor, "batch pos d_model"]) -> Float[Tensor, "batch pos d_model"]:
    """``mlp(x)`` with PyTorch's built-in activation (same numbers, tested)."""
    hidden = _linear(x.reshape(-1, x.shape[-1]), mlp.W_in, mlp.b_in)  # (batch·pos, d_mlp)
    return _linear(_ACTIVATIONS[mlp.activation](hidden), mlp.W_out, mlp.b_out).reshape(x.shape)


def _fused_pre_norm_block(
    block: nn.Module, x: Float[Tensor, "batch pos d_model"]
) -> Float[Tensor, "batch pos d_model"]:
    """A pre-norm block for training: the maths of ``Block.forward`` in as few kernels (and copies) as possible.

    ``F.layer_norm``; one ``addmm`` for Q, K and V of every head; SDPA with ``is_causal``; one
    ``addmm`` that adds the residual stream to the heads' writes through W_O; the MLP in two
    ``addmm`` (``benchmarks/bench_gpt.py`` times it against a nanoGPT-shaped model). No argument checks:
    ``GPT.forward`` checked the tokens, the shapes follow from them.
    """
    attn, mlp, ln1, ln2 = block.attn, block.mlp, block.ln1, block.ln2
    batch, pos, d_model = x.shape
    x = x.reshape(batch * pos, d_model)  # the residual stream, one row per position
    W_QKV, b_QKV = _qkv_weight(attn)
    qkv = _linear(F.layer_norm(x, (d_model,), ln1.w, ln1.b, ln1.eps), W_QKV, b_QKV)  # (batch·pos, 3·d_model)
    # split, not one permute: backward then joins the three gradients with one cat instead of a stack and a copy
    q, k, v = (t.view(batch, pos, attn.n_heads, attn.d_head).transpose(1, 2) for t in qkv.split(d_model, dim=1))
    z = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(batch * pos, d_model)
    x = torch.addmm(x, z, attn.W_O.reshape(d_model, d_model))  # x + the heads' writes, summed
    if attn.b_O is not None:
        x = x + attn.b_O
    hidden = _linear(F.layer_norm(x, (d_model,), ln2.w, ln2.b, ln2.eps), mlp.W_in, mlp.b_in)  # (batch·pos, d_mlp)
    x = torch.addmm(x, _ACTIVATIONS[mlp.activation](hidden), mlp.W_out)  # x + the MLP's write
    if mlp.b_out is not None:
        x = x + mlp.b_out
    return x.view(batch, pos, d_model)


class _CrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of rows of logits, with its gradient written out: (softmax − one-hot) / rows.

    Forward keeps the log-softmax (one pass over the logits); backward exponentiates it and subtracts
    1 at each row's target, where ``F.cross_entropy``'s backward first zero-fills a (rows, vocabulary)
    one-hot gradient and then makes a second pass. Only the logits get a gradient; no double backward.
    """

    @staticmethod
    def forward(ctx, logits: Tensor, targets: Tensor) -> Tensor:
        log_probs = torch.log_softmax(logits, dim=-1)  # (rows, d_vocab)
        ctx.save_for_backward(log_probs, targets)
        return -log_probs.gather(1, targets[:, None]).mean()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_loss: Tensor):
        log_probs, targets = ctx.saved_tensors
        grad = log_probs.exp()  # the softmax, (rows, d_vocab)
        grad[torch.arange(len(targets), device=grad.device), targets] -= 1.0  # minus the one-hot target
        return grad.mul_(grad_loss / len(targets)), None


def fused_sequence_loss(
    logits: Float[Tensor, "batch pos d_vocab"], targets: Int[Tensor, "batch pos"]
) -> Float[Tensor, ""]:
    """``training.sequence_loss`` in one log-softmax forward and one exp backward: same numbers (tested).

    The gradient of cross-entropy with respect to the logits is (softmax − one-hot) / rows, written out
    in ``_CrossEntropy`` instead of left to the chain of max / exp / sum / log / gather nodes and
    the input checks of the readable loss (a training step at nanoGPT's shape: about 5 ms instead of
    22 on one thread) or to ``F.cross_entropy`` (whose backward zero-fills a one-hot gradient first:
    about 3 ms more; ``benchmarks/bench_gpt.py``).
    """
    return _CrossEntropy.apply(logits.flatten(0, 1), targets.flatten())
