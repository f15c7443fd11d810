"""Activation patching: on the course's committed GPT, patching nothing restores exactly 0 and patching the final
stream at the scored position exactly 1; on a one-layer model whose attention is uniform and whose MLP writes
nothing, every restored fraction matches the model's arithmetic written out by hand."""

import pytest
import torch
import torch.nn.functional as F

from course_utils.gpt.checkpoint import load_checkpoint
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.model import GPT
from course_utils.interp.patching import (head_patching_map, residual_patching_map, restored_fraction,
                                          run_with_patches)


@pytest.fixture(scope="module")
def course():
    ckpt = load_checkpoint()
    tok = ckpt["tokenizer"]
    clean = tok.encode("ROMEO:\nI love thee, Juliet.\n\nJULIET:\nAnd I thee, Rom")
    corrupted = list(clean)
    corrupted[2] = tok.encode(" the")[0]  # the name's first piece, swapped for an ordinary word
    return ckpt["model"], torch.tensor([clean]), torch.tensor([corrupted])


def test_nothing_restores_zero_and_the_final_stream_restores_one(course):
    model, clean, corrupted = course
    logits, cache = run_with_patches(model, clean)
    torch.testing.assert_close(logits, model(clean), rtol=0, atol=1e-5)  # the same forward pass, run by hand
    unpatched, _ = run_with_patches(model, corrupted, cache)
    assert torch.equal(unpatched, run_with_patches(model, corrupted)[0])
    a, b = 4, 9  # any two tokens whose difference the corruption moves
    diff = [(x[0, -1, a] - x[0, -1, b]) for x in (logits, unpatched)]
    assert restored_fraction(diff[1], *diff) == 0
    grid = residual_patching_map(model, clean, corrupted, -1, a, b)
    n = clean.shape[1]
    assert grid.shape == (model.cfg.n_layers + 1, n)
    assert grid[-1, -1] == 1.0  # the final stream at the scored position is the clean one: the clean logits
    assert torch.equal(grid[-1, :-1], torch.zeros(n - 1))  # the final stream elsewhere never reaches the readout
    same = (clean == corrupted)[0]
    assert torch.equal(grid[0, same], torch.zeros(int(same.sum())))  # an identical embedding changes nothing
    assert grid[0, 2] == 1.0  # the one corrupted token, restored at the embedding: the clean run again
    heads = head_patching_map(model, clean, corrupted, -1, a, b)
    assert heads.shape == (model.cfg.n_layers, model.cfg.n_heads) and heads.isfinite().all()


def _uniform_attention_model() -> GPT:
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_vocab=5, n_ctx=4, d_model=4, n_heads=1, n_layers=1)).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()
        block = model.blocks[0]
        for p in (block.attn.W_Q, block.attn.W_K, block.attn.b_Q, block.attn.b_K, block.mlp.W_out,
                  block.mlp.b_out, block.attn.b_V, block.attn.b_O):
            p.zero_()  # uniform attention over the allowed keys, an MLP that writes nothing, no biases in the head
    return model


def _by_hand(model: GPT, e: torch.Tensor) -> torch.Tensor:
    """The last position's logits from embedded inputs e (pos, d_model), written out: the stream plus the mean
    over positions of each position's LayerNormed embedding through W_V and W_O, then LayerNorm and W_U."""
    block = model.blocks[0]
    with torch.no_grad():
        v = F.layer_norm(e, (4,), block.ln1.w, block.ln1.b) @ block.attn.W_V[0] @ block.attn.W_O[0]  # (pos, d_model)
        final = e[-1] + v.mean(0)
        return F.layer_norm(final, (4,), model.ln_final.w, model.ln_final.b) @ model.unembedding()


def test_a_tiny_case_by_hand():
    model = _uniform_attention_model()
    clean, corrupted = torch.tensor([[1, 2, 3, 0]]), torch.tensor([[4, 1, 3, 0]])
    a, b = 2, 3
    embed = {name: model.W_E[t[0]] + model.W_pos for name, t in (("clean", clean), ("corrupted", corrupted))}

    def diff(logits):
        return float(logits[a] - logits[b])

    d_clean, d_corr = diff(_by_hand(model, embed["clean"])), diff(_by_hand(model, embed["corrupted"]))
    assert abs(d_clean - d_corr) > 0.1
    grid = residual_patching_map(model, clean, corrupted, -1, a, b)
    for pos in range(4):
        mixed = embed["corrupted"].clone()
        mixed[pos] = embed["clean"][pos]  # position pos's embedding from the clean prompt
        expected = (diff(_by_hand(model, mixed)) - d_corr) / (d_clean - d_corr)
        assert grid[0, pos].item() == pytest.approx(expected, abs=1e-12)
    assert 0.05 < abs(grid[0, 0].item()) and 0.05 < abs(grid[0, 1].item())  # each corrupted position matters a bit
    assert grid[0, 2] == 0 and grid[0, 3] == 0  # same tokens there
    assert grid[1].tolist() == [0, 0, 0, 1]
    heads = head_patching_map(model, clean, corrupted, -1, a, b)  # the only head carries all the difference
    assert heads.item() == pytest.approx(1.0, abs=1e-12)
    earlier = residual_patching_map(model, clean, corrupted, 2, a, b)  # scored at position 2: position 3 is hidden
    assert earlier[:, 3].tolist() == [0, 0] and earlier[1].tolist() == [0, 0, 1, 0]


def test_argument_checks():
    model = _uniform_attention_model()
    clean, corrupted = torch.tensor([[1, 2, 3, 0]]), torch.tensor([[4, 1, 3, 0]])
    _, cache = run_with_patches(model, clean)
    with pytest.raises(ValueError, match="cache"):
        run_with_patches(model, corrupted, resid=[(0, 1)])
    with pytest.raises(ValueError, match="resid layer"):
        run_with_patches(model, corrupted, cache, resid=[(2, 1)])
    with pytest.raises(ValueError, match="heads head"):
        run_with_patches(model, corrupted, cache, heads=[(0, 1)])
    with pytest.raises(TypeError, match="resid"):
        run_with_patches(model, corrupted, cache, resid=[3])
    with pytest.raises(ValueError, match=r"cache\['resid'\]"):
        run_with_patches(model, corrupted[:, :3], cache, resid=[(0, 1)])
    with pytest.raises(ValueError, match="same shape"):
        residual_patching_map(model, clean, corrupted[:, :3], -1, 1, 2)
    with pytest.raises(ValueError, match="min_gap"):
        residual_patching_map(model, clean, clean, -1, 1, 2)
    with pytest.raises(ValueError, match="token_a"):
        head_patching_map(model, clean, corrupted, -1, 5, 2)
    with pytest.raises(TypeError, match="model"):
        head_patching_map(None, clean, corrupted, -1, 1, 2)
