"""Token embeddings: the lookup against torch's own embedding and the one-hot product, the worked
gradient step (hand-derived numbers), autograd touching only the rows that occurred, and bad input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from course_utils.embeddings import TokenEmbedding, embed, embed_via_one_hot, gradient_descent_step, one_hot


def _table(d_vocab=11, d_model=5, seed=0, dtype=torch.float64):
    return torch.randn(d_vocab, d_model, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def test_lookup_matches_torch_embedding_and_one_hot():
    W_E = _table()
    ids = torch.tensor([[3, 0, 10, 3], [7, 7, 1, 2]])
    expected = F.embedding(ids, W_E)  # oracle: PyTorch's embedding
    torch.testing.assert_close(embed(ids, W_E), expected, rtol=0, atol=0)
    torch.testing.assert_close(embed_via_one_hot(ids, W_E), expected)
    assert embed(ids, W_E).shape == (2, 4, 5)


def test_one_hot_rows():
    oh = one_hot(torch.tensor([1, 0, 2]), 3)
    assert oh.tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 1]]
    assert oh.dtype == torch.float32


def test_ids_carry_no_meaning_relabeling_rows_gives_the_same_vectors():
    # permute the vocabulary (new id = perm[old id]) and the table rows with it: same embeddings
    W_E = _table()
    perm = torch.randperm(11, generator=torch.Generator().manual_seed(1))
    W_E_relabelled = torch.empty_like(W_E)
    W_E_relabelled[perm] = W_E
    ids = torch.tensor([4, 9, 0])
    torch.testing.assert_close(embed(perm[ids], W_E_relabelled), embed(ids, W_E), rtol=0, atol=0)


def test_worked_gradient_step():
    row = torch.tensor([0.81, 0.10, -0.52], dtype=torch.float64)
    grad = torch.tensor([0.20, -0.10, 0.40], dtype=torch.float64)
    new = gradient_descent_step(row, grad, 0.1)
    torch.testing.assert_close(new, torch.tensor([0.79, 0.11, -0.56], dtype=torch.float64))


def test_only_rows_that_occurred_get_a_gradient():
    module = TokenEmbedding(d_vocab=20, d_model=4)
    ids = torch.tensor([[3, 5, 3, 17]])
    module(ids).square().sum().backward()
    touched = (module.W_E.grad.abs().sum(dim=1) > 0).nonzero().flatten().tolist()
    assert touched == [3, 5, 17]
    # token 3 occurred twice, so its gradient is the sum of two contributions: 2 × 2 × W_E[3]
    torch.testing.assert_close(module.W_E.grad[3], 4 * module.W_E[3].detach())


def test_scale_multiplies_by_sqrt_d_model():
    module = TokenEmbedding(d_vocab=10, d_model=16, scale=True)
    ids = torch.tensor([1, 2])
    torch.testing.assert_close(module(ids), module.W_E[ids].detach() * 4.0)


def test_bad_input():
    W_E = _table()
    with pytest.raises(TypeError, match="integer dtype"):
        embed(torch.tensor([1.0]), W_E)
    with pytest.raises(TypeError, match="token_ids must be an integer torch.Tensor, got list"):
        embed([1, 2], W_E)
    with pytest.raises(ValueError, match=r"\[0, d_vocab=11\).*from 0 to 11"):
        embed(torch.tensor([0, 11]), W_E)
    with pytest.raises(ValueError, match=r"-1 to 2"):
        embed(torch.tensor([-1, 2]), W_E)
    with pytest.raises(ValueError, match=r"W_E must have shape \(d_vocab, d_model\), got shape \(11,\)"):
        embed(torch.tensor([0]), W_E[:, 0])
    with pytest.raises(ValueError, match="same shape"):
        gradient_descent_step(torch.zeros(3), torch.zeros(2), 0.1)
    with pytest.raises(ValueError, match="lr must be a positive"):
        gradient_descent_step(torch.zeros(3), torch.zeros(3), -1.0)
    with pytest.raises(ValueError, match="d_vocab must be a positive int"):
        TokenEmbedding(0, 4)
