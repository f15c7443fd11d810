"""Token embeddings: a token id is a row index into the table W_E (d_vocab × d_model).

Covers: ``embed`` (the lookup), ``one_hot`` and ``embed_via_one_hot`` (the same lookup written as
a matrix product, to show the two agree), ``gradient_descent_step`` (one plain SGD update, for the
worked example), ``TokenEmbedding``, a minimal ``nn.Module`` holding ``W_E``, ``tied_logits`` (the
unembedding of a model that ties ``W_U = W_Eᵀ``, as GPT-2 does), ``changed_rows`` (which rows of a
table an update moved), ``add_token_rows`` (growing the vocabulary by new rows) and
``input_embedding_backward``, the gradients of GPT-2's input layer x = W_E[ids] + W_pos[:pos] written
by hand (a scatter-add into W_E's rows, a sum over the batch for W_pos), and ``tied_embedding_backward``,
dL/dW_E of a zero-layer model whose unembedding is W_Eᵀ (the lookup's share plus the unembedding's), both
tested against autograd.

Leaves out: tokenisation (notebook 01), positions (``course_utils.positions``), and training loops
(optimisers are PyTorch's own).
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from course_utils.validate import float_tensor, index_tensor, positive_int, positive_number


def _check_ids(token_ids: object, d_vocab: int) -> Tensor:
    return index_tensor("token_ids", token_ids, d_vocab)  # the range check is skipped on meta


def _check_table(W_E: object) -> Tensor:
    float_tensor("W_E", W_E, "(d_vocab, d_model)", min_dims=0, finite=False)
    if W_E.ndim != 2:
        raise ValueError(f"W_E must have shape (d_vocab, d_model), got shape {tuple(W_E.shape)}")
    return W_E


def embed(token_ids: Int[Tensor, "... pos"], W_E: Float[Tensor, "d_vocab d_model"]) -> Float[Tensor, "... pos d_model"]:
    """Row ``token_ids[...]`` of ``W_E`` for every id: ``embed(tensor([2, 0]), W_E)`` -> ``W_E[[2, 0]]``."""
    _check_table(W_E)
    _check_ids(token_ids, W_E.shape[0])
    return W_E[token_ids.to(W_E.device)]  # (..., pos, d_model)


def one_hot(
    token_ids: Int[Tensor, "... pos"], d_vocab: int, dtype: torch.dtype = torch.float32
) -> Float[Tensor, "... pos d_vocab"]:
    """One-hot rows: ``one_hot(tensor([1]), 3)`` -> ``tensor([[0., 1., 0.]])``."""
    positive_int("d_vocab", d_vocab)
    _check_ids(token_ids, d_vocab)
    return nn.functional.one_hot(token_ids, d_vocab).to(dtype)  # (..., pos, d_vocab)


def embed_via_one_hot(
    token_ids: Int[Tensor, "... pos"], W_E: Float[Tensor, "d_vocab d_model"]
) -> Float[Tensor, "... pos d_model"]:
    """The lookup as a matrix product, one_hot(ids) @ W_E: equal to ``embed`` but far slower."""
    _check_table(W_E)
    return one_hot(token_ids.to(W_E.device), W_E.shape[0], W_E.dtype) @ W_E  # (..., pos, d_model)


def gradient_descent_step(value: Tensor, grad: Tensor, lr: float) -> Tensor:
    """new = old − lr × grad: ``gradient_descent_step(tensor([0.81]), tensor([0.2]), 0.1)`` -> ``tensor([0.79])``."""
    float_tensor("value", value, min_dims=0, finite=False)
    float_tensor("grad", grad, min_dims=0, finite=False)
    if value.shape != grad.shape:
        raise ValueError(f"value and grad must have the same shape, got {tuple(value.shape)} and {tuple(grad.shape)}")
    lr = positive_number("lr", lr)
    return value - lr * grad


class TokenEmbedding(nn.Module):
    """``W_E`` as a learnable table: ``TokenEmbedding(d_vocab=10, d_model=4)(tensor([[3, 1]]))`` -> shape (1, 2, 4).

    ``scale=True`` multiplies by sqrt(d_model), as the original transformer paper does before
    adding its sinusoidal positions; it initialised ``W_E`` with std d_model^-1/2
    (``init_std=d_model ** -0.5``), so the scaled rows start with entries of size about 1, like the
    position table's. GPT-2 does not scale (``init_std=0.02``, its learned positions are as small).
    """

    def __init__(self, d_vocab: int, d_model: int, scale: bool = False, init_std: float = 0.02):
        super().__init__()
        positive_int("d_vocab", d_vocab), positive_int("d_model", d_model), positive_number("init_std", init_std)
        self.d_vocab, self.d_model, self.scale = d_vocab, d_model, scale
        self.W_E = nn.Parameter(torch.randn(d_vocab, d_model) * init_std)

    def forward(self, token_ids: Int[Tensor, "... pos"]) -> Float[Tensor, "... pos d_model"]:
        out = embed(token_ids, self.W_E)  # (..., pos, d_model)
        return out * math.sqrt(self.d_model) if self.scale else out


def tied_logits(
    x: Float[Tensor, "... pos d_model"], W_E: Float[Tensor, "d_vocab d_model"]
) -> Float[Tensor, "... pos d_vocab"]:
    """Logits with the unembedding tied to the embedding, ``W_U = W_Eᵀ``: ``x @ W_E.T``.

    ``tied_logits(W_E[[3]], W_E)[0, 3]`` is ``|W_E[3]|²``. Every row of ``W_E`` takes part in
    every logit, so a loss on the logits sends a gradient to every row, seen or not.
    """
    _check_table(W_E)
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.ndim < 1 or x.shape[-1] != W_E.shape[1]:
        raise ValueError(
            f"x must be a floating-point tensor of shape (..., d_model={W_E.shape[1]}), got "
            f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}"
        )
    return x @ W_E.T  # (..., pos, d_vocab)


def changed_rows(before: Float[Tensor, "d_vocab d_model"], after: Float[Tensor, "d_vocab d_model"]) -> list[int]:
    """Indices of the rows that differ: ``changed_rows(zeros(3, 2), tensor([[0, 0], [1, 0], [0, 0]]))`` -> ``[1]``."""
    for name, t in (("before", before), ("after", after)):
        if not isinstance(t, torch.Tensor) or t.ndim != 2:
            raise ValueError(
                f"{name} must be a 2-d tensor (rows, columns), got "
                f"{tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}"
            )
    if before.shape != after.shape:
        raise ValueError(
            f"before and after must have the same shape, got {tuple(before.shape)} and {tuple(after.shape)}"
        )
    return (before != after).any(dim=1).nonzero().flatten().tolist()


def add_token_rows(
    W_E: Float[Tensor, "d_vocab d_model"], n_new: int, init_std: float = 0.02, generator: torch.Generator | None = None
) -> Float[Tensor, "d_vocab_new d_model"]:
    """W_E with ``n_new`` random rows appended for new tokens; the old rows (and ids) are unchanged.

    ``add_token_rows(torch.zeros(5, 4), 2).shape`` -> ``(7, 4)``; the new rows must then be learned.
    """
    _check_table(W_E)
    positive_int("n_new", n_new)  # how many tokens to add
    positive_number("init_std", init_std)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    where = generator.device if generator is not None else W_E.device  # draw where the generator lives
    new = (
        torch.randn(n_new, W_E.shape[1], generator=generator, dtype=W_E.dtype, device=where) * init_std
    )  # (n_new, d_model)
    return torch.cat([W_E.detach(), new.to(W_E.device)])  # (d_vocab + n_new, d_model)


def input_embedding_backward(
    token_ids: Int[Tensor, "batch pos"], grad_out: Float[Tensor, "batch pos d_model"], d_vocab: int, n_ctx: int
) -> tuple[Float[Tensor, "d_vocab d_model"], Float[Tensor, "n_ctx d_model"]]:
    """(dL/dW_E, dL/dW_pos) for x = W_E[token_ids] + W_pos[:pos], given dL/dx (``grad_out``).

    Row t of dL/dW_E is the sum of ``grad_out`` over every place token t occurs (repeats add up, unseen
    tokens get zeros); row p of dL/dW_pos is the sum over the batch at position p (rows past ``pos`` are zero).
    ``token_ids=[[1, 1]]``, ``grad_out=[[[1.], [2.]]]``, d_vocab 3, n_ctx 2 -> ``([[0.], [3.], [0.]], [[1.], [2.]])``.
    """
    positive_int("d_vocab", d_vocab), positive_int("n_ctx", n_ctx)
    float_tensor("grad_out", grad_out, "(batch, pos, d_model)", min_dims=3)
    _check_ids(token_ids, d_vocab)
    if token_ids.ndim != 2 or tuple(token_ids.shape) != tuple(grad_out.shape[:-1]):
        raise ValueError(
            f"token_ids must have shape (batch, pos) = grad_out's first two dims {tuple(grad_out.shape[:-1])}, "
            f"got {tuple(token_ids.shape)}"
        )
    n_pos, d_model = grad_out.shape[-2:]
    if n_pos > n_ctx:
        raise ValueError(f"the input has {n_pos} positions, more than n_ctx={n_ctx}")
    grad_W_E = grad_out.new_zeros(d_vocab, d_model)
    grad_W_E.index_add_(0, token_ids.reshape(-1).to(grad_out.device), grad_out.reshape(-1, d_model))
    grad_W_pos = grad_out.new_zeros(n_ctx, d_model)
    grad_W_pos[:n_pos] = grad_out.sum(dim=0)  # (pos, d_model)
    return grad_W_E, grad_W_pos


def tied_embedding_backward(
    token_ids: Int[Tensor, "... pos"], targets: Int[Tensor, "... pos"], W_E: Float[Tensor, "d_vocab d_model"]
) -> Float[Tensor, "d_vocab d_model"]:
    """dL/dW_E for L = mean cross-entropy of logits = W_E[token_ids] @ W_Eᵀ against ``targets`` (tied W_U = W_Eᵀ).

    dL/dlogits = (softmax(logits) − one_hot(targets)) / N over the N predictions. W_E is used twice, so its gradient
    has two shares: as the unembedding, dL/dlogitsᵀ x (every row, every token); as the lookup, dL/dx = dL/dlogits W_E
    scatter-added into the rows of ``token_ids``. With one token and d_vocab 1 the loss is 0 and so is the gradient.
    """
    _check_table(W_E)
    d_vocab, d_model = W_E.shape
    _check_ids(token_ids, d_vocab), _check_ids(targets, d_vocab)
    if token_ids.shape != targets.shape:
        raise ValueError(f"targets must have token_ids' shape {tuple(token_ids.shape)}, got {tuple(targets.shape)}")
    x = W_E[token_ids.to(W_E.device)]  # (..., pos, d_model)
    probs = torch.softmax(x @ W_E.T, dim=-1)  # (..., pos, d_vocab)
    grad_logits = (probs - one_hot(targets.to(W_E.device), d_vocab, W_E.dtype)) / targets.numel()
    grad_W_E = grad_logits.reshape(-1, d_vocab).T @ x.reshape(-1, d_model)  # W_E as the unembedding
    grad_x = grad_logits @ W_E  # (..., pos, d_model): back through the unembedding to the looked-up rows
    return grad_W_E.index_add_(0, token_ids.reshape(-1).to(W_E.device), grad_x.reshape(-1, d_model))
