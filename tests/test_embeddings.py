"""Token embeddings: the lookup against torch's own embedding and the one-hot product, the worked
gradient step (hand-derived numbers), autograd touching only the rows that occurred in an untied
lookup but every row once W_U = W_Eᵀ is tied (Hugging Face's GPT-2 as the oracle), optimisers that
move rows with no gradient (Adam's momentum, AdamW's weight decay), the original transformer's
init and sqrt(d_model) scale, growing the vocabulary (against HF's resize_token_embeddings), and bad
input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from course_utils.embeddings import (TokenEmbedding, add_token_rows, changed_rows, embed, embed_via_one_hot,
                                     gradient_descent_step, input_embedding_backward, one_hot, tied_embedding_backward,
                                     tied_logits)


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


def _tiny_gpt2(tied: bool):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(vocab_size=40, n_positions=8, n_embd=16, n_layer=1, n_head=2,
                                     tie_word_embeddings=tied)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config)  # built from a config: nothing is downloaded


@pytest.mark.parametrize("tied", [True, False])
def test_tied_unembedding_gives_every_row_a_gradient_like_gpt2(tied):
    ids = torch.tensor([[3, 5, 3, 17]])
    model = _tiny_gpt2(tied)  # oracle: GPT-2 itself, whose lm_head is wte when tied
    assert (model.lm_head.weight is model.transformer.wte.weight) == tied
    model(ids, labels=ids).loss.backward()
    hf_rows = (model.transformer.wte.weight.grad != 0).any(dim=1).nonzero().flatten().tolist()
    # ours: a zero-layer model, logits = embed(ids) @ W_E.T when tied, @ a separate W_U.T when not
    layer = TokenEmbedding(d_vocab=40, d_model=16)
    W_U = layer.W_E if tied else torch.nn.Parameter(torch.randn(40, 16) * 0.02)
    logits = tied_logits(layer(ids), W_U)  # (1, pos, d_vocab)
    F.cross_entropy(logits[0, :-1], ids[0, 1:]).backward()
    ours = (layer.W_E.grad != 0).any(dim=1).nonzero().flatten().tolist()
    # untied: only the tokens read at a position that has a target (the last token, 17, is only a target)
    expected = list(range(40)) if tied else [3, 5]
    assert hf_rows == expected and ours == expected


def test_tied_logits_is_the_product_with_the_transposed_table():
    W_E = _table()
    x = torch.randn(2, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(tied_logits(x, W_E), F.linear(x, W_E))  # oracle: a bias-free linear layer with weight W_E
    with pytest.raises(ValueError, match=r"x must be a floating-point tensor of shape \(\.\.\., d_model=5\)"):
        tied_logits(torch.zeros(2, 4, dtype=torch.float64), W_E)


def _step(layer, optimizer, ids):
    optimizer.zero_grad()
    layer(ids).sum().backward()
    before = layer.W_E.detach().clone()
    optimizer.step()
    return changed_rows(before, layer.W_E.detach())


def test_adam_momentum_moves_a_row_that_has_no_gradient():
    torch.manual_seed(0)
    layer = TokenEmbedding(d_vocab=8, d_model=4)
    adam = torch.optim.Adam(layer.parameters(), lr=0.1)
    assert _step(layer, adam, torch.tensor([1, 4])) == [1, 4]
    moved = _step(layer, adam, torch.tensor([6]))  # rows 1 and 4 get a zero gradient this time ...
    assert layer.W_E.grad[[1, 4]].abs().sum() == 0
    assert moved == [1, 4, 6]  # ... and still move: Adam's running average of past gradients
    sgd = torch.optim.SGD(layer.parameters(), lr=0.1)
    assert _step(layer, sgd, torch.tensor([6])) == [6]  # plain SGD moves only rows with a gradient


def test_weight_decay_moves_every_row():
    torch.manual_seed(0)
    layer = TokenEmbedding(d_vocab=8, d_model=4)
    W_before = layer.W_E.detach().clone()
    adamw = torch.optim.AdamW(layer.parameters(), lr=0.1, weight_decay=0.1)
    assert _step(layer, adamw, torch.tensor([2])) == list(range(8))
    untouched = [0, 1, 3, 4, 5, 6, 7]  # no gradient: only the decay, w <- w (1 - lr * wd)
    torch.testing.assert_close(layer.W_E.detach()[untouched], W_before[untouched] * (1 - 0.1 * 0.1))


def test_changed_rows():
    a = torch.zeros(4, 3)
    b = a.clone()
    b[2, 1] = 1.0
    assert changed_rows(a, b) == [2] and changed_rows(a, a) == []
    with pytest.raises(ValueError, match="same shape"):
        changed_rows(a, torch.zeros(3, 3))


def test_original_transformer_init_makes_scaled_rows_unit_sized():
    # std d_model^-1/2 at init, times sqrt(d_model): entries of RMS about 1, like the position table
    d_model = 512
    torch.manual_seed(0)
    layer = TokenEmbedding(d_vocab=2000, d_model=d_model, scale=True, init_std=d_model ** -0.5)
    ids = torch.arange(2000)
    rms_scaled = layer(ids).square().mean().sqrt().item()
    rms_unscaled = layer.W_E.detach().square().mean().sqrt().item()
    assert abs(rms_scaled - 1.0) < 0.01
    assert abs(rms_unscaled - d_model ** -0.5) < 0.01 * d_model ** -0.5


def test_add_token_rows_keeps_old_rows_like_hf_resize():
    model = _tiny_gpt2(tied=True)
    old = model.transformer.wte.weight.detach().clone()
    model.resize_token_embeddings(43)  # oracle: HF's own way of adding tokens
    ours = add_token_rows(old, 3, generator=torch.Generator().manual_seed(0))
    assert ours.shape == model.transformer.wte.weight.shape == (43, 16)
    torch.testing.assert_close(ours[:40], old, rtol=0, atol=0)
    torch.testing.assert_close(model.transformer.wte.weight.detach()[:40], old, rtol=0, atol=0)
    assert not torch.equal(ours[40:], torch.zeros(3, 16))
    with pytest.raises(ValueError, match="n_new must be a positive int"):
        add_token_rows(old, 0)


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
    with pytest.raises(ValueError, match="init_std must be a positive finite number"):
        TokenEmbedding(4, 4, init_std=0)
    with pytest.raises(ValueError, match="init_std must be a positive finite number"):
        add_token_rows(W_E, 1, init_std=-1.0)
    with pytest.raises(TypeError, match="init_std must be a number, got bool"):
        add_token_rows(W_E, 1, init_std=True)
    with pytest.raises(TypeError, match="n_new must be a positive int, got 1.0"):
        add_token_rows(W_E, 1.0)
    with pytest.raises(TypeError, match="d_vocab must be a positive int, got True"):
        one_hot(torch.tensor([0]), True)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        add_token_rows(W_E, 1, generator=0)


@pytest.mark.gpu
def test_tied_logits_and_new_rows_follow_the_device():
    W_E = _table(dtype=torch.float32).cuda()
    x = torch.randn(3, 5, device="cuda")
    logits = tied_logits(x, W_E)
    assert logits.device.type == "cuda"
    torch.testing.assert_close(logits.cpu(), tied_logits(x.cpu(), W_E.cpu()), rtol=1e-5, atol=1e-5)
    grown = add_token_rows(W_E, 2)
    assert grown.device.type == "cuda" and torch.equal(grown[:11], W_E)
    assert changed_rows(W_E, W_E * 1) == []


def test_one_fixed_row_per_token_whatever_the_sense():
    real = pytest.importorskip("course_utils.tokenisation.real")
    tokenizer = real.tiktoken_encoding("gpt2")  # read from installed files, offline
    W_E = torch.randn(tokenizer.n_vocab, 4, generator=torch.Generator().manual_seed(8))
    (bank,) = tokenizer.encode(" bank")
    river, loan = tokenizer.encode("We sat on the river bank."), tokenizer.encode("The bank approved the loan.")
    assert bank in river and bank in loan
    torch.testing.assert_close(embed(torch.tensor(river), W_E)[river.index(bank)],
                               embed(torch.tensor(loan), W_E)[loan.index(bank)], rtol=0, atol=0)


def test_gpt3_embedding_size_from_the_seed():
    # the seed's count: 50,257 × 12,288 = 617,558,016 (GPT-3 reuses GPT-2's vocabulary)
    real = pytest.importorskip("course_utils.tokenisation.real")
    with torch.device("meta"):
        layer = TokenEmbedding(d_vocab=real.tiktoken_encoding("gpt2").n_vocab, d_model=12288)
    assert sum(p.numel() for p in layer.parameters()) == 617_558_016


def test_input_embedding_backward_agrees_with_autograd():
    gen = torch.Generator().manual_seed(3)
    d_vocab, n_ctx, d_model = 7, 6, 4
    ids = torch.tensor([[1, 3, 1, 1], [0, 3, 5, 1]])  # repeats within and across rows; ids 2, 4 and 6 unused
    W_E = torch.randn(d_vocab, d_model, generator=gen, dtype=torch.float64, requires_grad=True)
    W_pos = torch.randn(n_ctx, d_model, generator=gen, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(2, 4, d_model, generator=gen, dtype=torch.float64)
    expected = torch.autograd.grad(F.embedding(ids, W_E) + W_pos[:4], (W_E, W_pos), grad_out)
    got = input_embedding_backward(ids, grad_out, d_vocab, n_ctx)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e)
    assert (got[0][[2, 4, 6]] == 0).all() and (got[1][4:] == 0).all()


def test_input_embedding_backward_hand_worked_and_bad_input():
    grad_W_E, grad_W_pos = input_embedding_backward(torch.tensor([[1, 1]]), torch.tensor([[[1.0], [2.0]]]), 3, 2)
    assert grad_W_E.tolist() == [[0.0], [3.0], [0.0]] and grad_W_pos.tolist() == [[1.0], [2.0]]
    with pytest.raises(ValueError, match="more than n_ctx=1"):
        input_embedding_backward(torch.tensor([[1, 1]]), torch.ones(1, 2, 1), 3, 1)
    with pytest.raises(ValueError, match="token_ids must have shape"):
        input_embedding_backward(torch.tensor([1, 1]), torch.ones(1, 2, 1), 3, 2)
    with pytest.raises(ValueError, match="token_ids must lie in"):
        input_embedding_backward(torch.tensor([[1, 3]]), torch.ones(1, 2, 1), 3, 2)


@pytest.mark.parametrize("shape", [(5,), (2, 4)])
def test_tied_embedding_backward_agrees_with_autograd(shape):
    gen = torch.Generator().manual_seed(4)
    W_E = torch.randn(7, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    ids, targets = torch.randint(0, 7, shape, generator=gen), torch.randint(0, 7, shape, generator=gen)
    ids.view(-1)[:2] = 6  # a repeated id
    loss = F.cross_entropy(tied_logits(embed(ids, W_E), W_E).reshape(-1, 7), targets.reshape(-1))
    (expected,) = torch.autograd.grad(loss, W_E)
    torch.testing.assert_close(tied_embedding_backward(ids, targets, W_E.detach()), expected)
    with pytest.raises(ValueError, match="targets must have token_ids' shape"):
        tied_embedding_backward(ids, targets[..., :2], W_E.detach())
