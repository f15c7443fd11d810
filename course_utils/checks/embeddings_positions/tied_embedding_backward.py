"""Exercise ``tied_embedding_backward(token_ids, targets, W_E)``: dL/dW_E when the unembedding is W_Eᵀ, by hand.

Required form (stated in the notebook): L is the MEAN cross-entropy of logits = W_E[token_ids] @ W_Eᵀ against
``targets`` (same shape as ``token_ids``); return dL/dW_E, shape (d_vocab, d_model), both of its shares (W_E as the
unembedding and as the lookup), without autograd. The reference is ``course_utils.embeddings.tied_embedding_backward``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.embeddings import tied_embedding_backward as _tied_reference


def tied_embedding_backward(token_ids, targets, W_E):
    """Reference: (softmax − one-hot) / N, then the unembedding's share plus the lookup's scatter-added share."""
    return _tied_reference(token_ids, targets, W_E)


def _tied_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    W_E = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    sentence = torch.tensor([1, 5, 4, 2, 0, 5])  # YOUR CAT IS A LOVELY CAT
    ids = sentence if seed == 0 else torch.randint(0, 6, (6,), generator=gen)
    batch = torch.randint(0, 9, (2, 5), generator=gen)
    batch[1, :2] = batch[0, 0]  # one id repeated within and across rows
    return [
        Case("YOUR CAT IS A LOVELY predicting the next token, d_vocab = 6, d_model = 3" if seed == 0
             else "5 tokens predicting the next, d_vocab = 6, d_model = 3", (ids[:-1], ids[1:], W_E)),
        Case("batch 2 × 5, d_vocab = 9, d_model = 4 (float32)",
             (batch, torch.randint(0, 9, (2, 5), generator=gen), torch.randn(9, 4, generator=gen))),
    ]


def tied_grad_with(token_ids, targets, W_E, *, unembedding=True, lookup=True, mean=True, sign=1.0):
    """The gradient with one step changed: a share left out, the loss summed, the softmax − one-hot sign flipped."""
    d_vocab, d_model = W_E.shape
    x = W_E[token_ids]
    grad_logits = sign * (torch.softmax(x @ W_E.T, dim=-1) - F.one_hot(targets, d_vocab).to(W_E.dtype))
    grad_logits = grad_logits / (targets.numel() if mean else 1)
    grad = torch.zeros_like(W_E)
    if unembedding:
        grad += grad_logits.reshape(-1, d_vocab).T @ x.reshape(-1, d_model)
    if lookup:
        grad.index_add_(0, token_ids.reshape(-1), (grad_logits @ W_E).reshape(-1, d_model))
    return grad


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "the lookup's share only",
    "only the rows of the input tokens got a gradient: W_E is also the unembedding, where every row makes one "
    "logit, so every row gets that share too (the logits' gradient, transposed, times the embedded rows)",
)
def tied_lookup_only(token_ids, targets, W_E):
    return tied_grad_with(token_ids, targets, W_E, unembedding=False)


@bank.mistake(
    "the unembedding's share only",
    "W_E is used twice: you have its share as the unembedding, but the looked-up rows also get the gradient that "
    "flows back to x (the logits' gradient times W_E), added into the rows of the input tokens",
)
def tied_unembedding_only(token_ids, targets, W_E):
    return tied_grad_with(token_ids, targets, W_E, lookup=False)


@bank.mistake(
    "loss summed, not averaged",
    "the loss is the MEAN over the predictions, so the logits' gradient is (softmax − one-hot) divided by their number",
)
def tied_summed(token_ids, targets, W_E):
    return tied_grad_with(token_ids, targets, W_E, mean=False)


@bank.mistake(
    "one-hot minus softmax",
    "the sign is flipped: the gradient of cross-entropy with respect to the logits is softmax − one-hot, so a "
    "descent step lowers the wrong tokens' logits",
)
def tied_sign_flipped(token_ids, targets, W_E):
    return tied_grad_with(token_ids, targets, W_E, sign=-1.0)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("a loop over the predictions")
def tied_loop(token_ids, targets, W_E):
    grad = torch.zeros_like(W_E)
    n = targets.numel()
    for token, target in zip(token_ids.reshape(-1).tolist(), targets.reshape(-1).tolist()):
        x = W_E[token]
        g = torch.softmax(W_E @ x, dim=0)
        g[target] -= 1
        grad += torch.outer(g, x) / n
        grad[token] += g @ W_E / n
    return grad


@bank.alternative("one-hot matrices and einsum, log_softmax exponentiated")
def tied_einsum(token_ids, targets, W_E):
    d_vocab = W_E.shape[0]
    picks = F.one_hot(token_ids, d_vocab).to(W_E.dtype)  # (..., pos, d_vocab)
    x = picks @ W_E
    grad_logits = (F.log_softmax(x @ W_E.T, dim=-1).exp() - F.one_hot(targets, d_vocab).to(W_E.dtype)) / targets.numel()
    return torch.einsum("...pv,...pd->vd", grad_logits, x) + torch.einsum("...pv,...pw,wd->vd", picks, grad_logits, W_E)


@bank.alternative("float32, scatter_add_ for the lookup's share")
def tied_float32(token_ids, targets, W_E):
    W = W_E.float()
    flat_ids, flat_targets = token_ids.flatten(), targets.flatten()
    x = W[flat_ids]  # (n, d_model)
    grad_logits = torch.softmax(x @ W.T, dim=-1)
    grad_logits[torch.arange(len(flat_targets)), flat_targets] -= 1
    grad_logits /= len(flat_targets)
    index = flat_ids[:, None].expand(-1, W.shape[1])
    return (grad_logits.T @ x).scatter_add_(0, index, grad_logits @ W)


TIED_EMBEDDING_BACKWARD = Exercise(
    name="tied_embedding_backward",
    reference=tied_embedding_backward,
    cases=_tied_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Recompute the forward pass (look up the rows, multiply by W_E transposed, softmax), get the gradient of "
        "the logits from the cross-entropy rule, then follow it back to W_E along BOTH roads W_E took.",
        "The logits' gradient is (softmax − one_hot(targets)) / N. As the unembedding, W_E gets that gradient "
        "(rows stacked, transposed) times the embedded rows x. As the lookup, the gradient reaching x is the "
        "logits' gradient times W_E, and each of its rows is added into the row of its token id, as in "
        "embedding_backward.",
    ],
)
EXERCISES = {TIED_EMBEDDING_BACKWARD.name: TIED_EMBEDDING_BACKWARD}


def check_tied_embedding_backward(fn):
    """Check a student's ``tied_embedding_backward(token_ids, targets, W_E)``."""
    return TIED_EMBEDDING_BACKWARD.check(fn)
