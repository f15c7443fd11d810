"""Exercise ``embedding_backward(token_ids, grad_out, d_vocab, n_ctx)``: the gradients of GPT-2's input layer.

Required form (stated in the notebook): for x = W_E[token_ids] + W_pos[:pos] with ``token_ids`` of shape
(batch, pos) and ``grad_out`` = dL/dx of shape (batch, pos, d_model), return ``(grad_W_E, grad_W_pos)`` of shapes
(d_vocab, d_model) and (n_ctx, d_model), computed by hand (no autograd). The reference is
``course_utils.embeddings.input_embedding_backward``, tested against autograd.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.embeddings import input_embedding_backward


def embedding_backward(token_ids, grad_out, d_vocab, n_ctx):
    """Reference: grad_W_E scatter-adds grad_out into the rows of the ids; grad_W_pos sums it over the batch."""
    return input_embedding_backward(token_ids, grad_out, d_vocab, n_ctx)


def _backward_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cat = torch.tensor([[1, 5, 4, 2, 0, 5]])  # YOUR CAT IS A LOVELY CAT: CAT (id 5) twice, DOG (id 3) absent
    random_ids = torch.randint(0, 9, (3, 5), generator=gen)
    random_ids[:, 0] = random_ids[0, 1]  # one id repeated down the batch and within a row
    return [
        Case("YOUR CAT IS A LOVELY CAT, 6 tokens, d_vocab = 6, n_ctx = 8, d_model = 3" if seed == 0
             else "6 tokens, d_vocab = 6, n_ctx = 8, d_model = 3",
             (cat if seed == 0 else torch.randint(0, 6, (1, 6), generator=gen),
              torch.randn(1, 6, 3, generator=gen, dtype=torch.float64), 6, 8)),
        Case("batch 3 × 5 positions, d_vocab = 9, n_ctx = 7, d_model = 4 (float32)",
             (random_ids, torch.randn(3, 5, 4, generator=gen), 9, 7)),
    ]


def _grads(token_ids, grad_out, d_vocab, n_ctx, *, accumulate=True, batch="sum", full_table=True):
    """The two gradients with one step changed: rows overwritten, the batch averaged, W_pos cut to pos rows."""
    d_model = grad_out.shape[-1]
    grad_W_E = grad_out.new_zeros(d_vocab, d_model)
    if accumulate:
        grad_W_E.index_add_(0, token_ids.reshape(-1), grad_out.reshape(-1, d_model))
    else:  # in order, so the last occurrence wins (a vectorised assignment leaves the winner unspecified)
        for token, row in zip(token_ids.reshape(-1).tolist(), grad_out.reshape(-1, d_model)):
            grad_W_E[token] = row
    per_position = grad_out.sum(dim=0) if batch == "sum" else grad_out.mean(dim=0)  # (pos, d_model)
    if not full_table:
        return grad_W_E, per_position
    grad_W_pos = grad_out.new_zeros(n_ctx, d_model)
    grad_W_pos[: grad_out.shape[1]] = per_position
    return grad_W_E, grad_W_pos


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "repeated tokens overwritten",
    "a token that occurs several times gets only one of its gradients: each occurrence ADDS its row of grad_out "
    "to that token's row (an assignment keeps just one of them)",
)
def backward_overwrites(token_ids, grad_out, d_vocab, n_ctx):
    return _grads(token_ids, grad_out, d_vocab, n_ctx, accumulate=False)


@bank.mistake(
    "W_pos gradient averaged over the batch",
    "grad_W_pos is the batch's average: every sequence uses the same W_pos row at a position, so their "
    "gradients add up, as they would for any weight shared across the batch",
)
def backward_mean_over_batch(token_ids, grad_out, d_vocab, n_ctx):
    return _grads(token_ids, grad_out, d_vocab, n_ctx, batch="mean")


@bank.mistake(
    "W_pos gradient with pos rows",
    "grad_W_pos must have one row per row of W_pos, (n_ctx, d_model): the positions the input does not reach "
    "get zero rows",
)
def backward_short_W_pos(token_ids, grad_out, d_vocab, n_ctx):
    return _grads(token_ids, grad_out, d_vocab, n_ctx, full_table=False)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("a loop over every token, adding rows")
def backward_loop(token_ids, grad_out, d_vocab, n_ctx):
    grad_W_E = torch.zeros(d_vocab, grad_out.shape[-1], dtype=grad_out.dtype)
    grad_W_pos = torch.zeros(n_ctx, grad_out.shape[-1], dtype=grad_out.dtype)
    for b in range(token_ids.shape[0]):
        for p in range(token_ids.shape[1]):
            grad_W_E[token_ids[b, p]] += grad_out[b, p]
            grad_W_pos[p] += grad_out[b, p]
    return grad_W_E, grad_W_pos


@bank.alternative("one-hot matrix product, F.pad for W_pos")
def backward_one_hot(token_ids, grad_out, d_vocab, n_ctx):
    one_hot = F.one_hot(token_ids, d_vocab).to(grad_out.dtype)  # (batch, pos, d_vocab)
    grad_W_E = torch.einsum("bpv,bpd->vd", one_hot, grad_out)
    return grad_W_E, F.pad(grad_out.sum(0), (0, 0, 0, n_ctx - grad_out.shape[1]))


@bank.alternative("scatter_add_ with an expanded index, float32")
def backward_scatter_add(token_ids, grad_out, d_vocab, n_ctx):
    flat = grad_out.float().flatten(0, 1)  # (batch * pos, d_model)
    index = token_ids.flatten()[:, None].expand(-1, flat.shape[-1])
    grad_W_E = torch.zeros(d_vocab, flat.shape[-1]).scatter_add_(0, index, flat)
    grad_W_pos = torch.zeros(n_ctx, flat.shape[-1])
    grad_W_pos[: grad_out.shape[1]] += grad_out.float().sum(0)
    return grad_W_E, grad_W_pos


EMBEDDING_BACKWARD = Exercise(
    name="embedding_backward",
    reference=embedding_backward,
    cases=_backward_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "x[b, p] is W_E's row for token_ids[b, p] plus W_pos's row p, each copied in unchanged. So the gradient of "
        "x[b, p] flows back, unchanged, into exactly those two rows, and a row that is used several times collects "
        "the sum of all its gradients.",
        "Start from zero tables of the right shapes. For W_E, add each position's gradient vector into the row of "
        "its token id (a loop, or index_add_ / index_put_ with accumulation, or a one-hot matrix product). For "
        "W_pos, sum grad_out over the batch dimension and write it into the first pos rows.",
    ],
)
EXERCISES = {EMBEDDING_BACKWARD.name: EMBEDDING_BACKWARD}


def check_embedding_backward(fn):
    """Check a student's ``embedding_backward(token_ids, grad_out, d_vocab, n_ctx)``."""
    return EMBEDDING_BACKWARD.check(fn)
