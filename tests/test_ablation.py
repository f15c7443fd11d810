"""ablation: a zero-ablated head equals the same model with that head's values zeroed (its z is then
0), mean ablation is a no-op on identical rows, the per-position losses equal torch's cross-entropy,
the model is left untouched, inside_word's worked example, head_findings against its pieces, and clear errors."""

import copy

import pytest
import torch
import torch.nn.functional as F

from course_utils.gpt.ablation import ablated_logits, head_ablation_losses, head_findings, inside_word
from course_utils.gpt.model import GPT, GPTConfig
from tiny_models import sharp_gpt

CFG = GPTConfig(d_vocab=41, n_ctx=16, d_model=24, n_heads=3, n_layers=2, d_mlp=40)


def _model():
    return sharp_gpt(CFG)


def _tokens(batch=3):
    return torch.randint(0, CFG.d_vocab, (batch, 12), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("layer,head", [(0, 0), (0, 2), (1, 1)])
def test_zero_ablation_equals_zeroing_the_heads_values(layer, head):
    model, tokens = _model(), _tokens()
    oracle = copy.deepcopy(model)
    with torch.no_grad():
        oracle.blocks[layer].attn.W_V[head].zero_()
        oracle.blocks[layer].attn.b_V[head].zero_()
        expected = oracle(tokens)
    got = ablated_logits(model, tokens, layer, head)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(got, model(tokens).detach(), atol=1e-3)  # the head mattered


def test_mean_ablation_changes_nothing_when_every_row_is_the_same():
    model, tokens = _model(), _tokens(1).repeat(4, 1)
    torch.testing.assert_close(ablated_logits(model, tokens, 1, 0, mode="mean"), model(tokens).detach(),
                               rtol=1e-5, atol=1e-5)
    mixed = _tokens(4)
    assert not torch.allclose(ablated_logits(model, mixed, 1, 0, mode="mean"), model(mixed).detach(), atol=1e-3)


def test_losses_are_torch_cross_entropy_per_position_and_model_untouched():
    model, tokens = _model(), _tokens()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    out = head_ablation_losses(model, tokens, 0, 1)
    assert out["clean"].shape == out["ablated"].shape == (3, 11)
    expected = F.cross_entropy(model(tokens)[:, :-1].reshape(-1, CFG.d_vocab), tokens[:, 1:].reshape(-1))
    torch.testing.assert_close(out["clean"].mean(), expected.detach())
    ablated = F.cross_entropy(ablated_logits(model, tokens, 0, 1)[:, :-1].reshape(-1, CFG.d_vocab),
                              tokens[:, 1:].reshape(-1), reduction="none")
    torch.testing.assert_close(out["ablated"].flatten(), ablated)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_inside_word_worked_example():
    got = inside_word([["R", "om", "eo", ":", "\n", "Wh", "at", " say"]])
    assert got.tolist() == [[False, True, True, False, False, False, True, False]]


def test_head_findings_reads_the_top_heads_and_their_ablations():
    model, tokens = _model(), _tokens(4)
    is_delim = tokens % 5 == 0
    inside = torch.rand(4, 11, generator=torch.Generator().manual_seed(2)) < 0.5
    found = head_findings(model, tokens, is_delim, inside)
    with torch.no_grad():
        patterns = torch.stack(model.patterns(tokens), 1)  # (batch, layer, head, q_pos, k_pos)
    previous = patterns.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))  # (layer, head)
    on_delim = (patterns * is_delim[:, None, None, None, :]).sum(-1).mean(dim=(0, -1))  # (layer, head)
    for name, scores in {"previous": previous, "delimiter": on_delim}.items():
        layer, head = divmod(int(scores.argmax()), CFG.n_heads)
        assert found[name]["head"] == (layer, head)
        assert found[name]["score"] == pytest.approx(float(scores.max()))
        for mode in ("zero", "mean"):
            losses = head_ablation_losses(model, tokens, layer, head, mode)
            change = losses["ablated"] - losses["clean"]
            assert found[name][mode] == pytest.approx(
                (float(change[inside].mean()), float(change[~inside].mean()), float(change.mean())), abs=1e-6)
    chance = sum(is_delim[b, : q + 1].float().mean().item() for b in range(4) for q in range(12)) / 48
    assert found["delimiter"]["chance"] == pytest.approx(chance)
    assert found["delimiter"]["ratio"] == pytest.approx(found["delimiter"]["score"] / chance)
    with pytest.raises(ValueError, match="inside"):
        head_findings(model, tokens, is_delim, inside[:, :-1])


def test_bad_input():
    model, tokens = _model(), _tokens()
    with pytest.raises(ValueError, match="layer"):
        ablated_logits(model, tokens, 2, 0)
    with pytest.raises(ValueError, match="head"):
        ablated_logits(model, tokens, 0, 3)
    with pytest.raises(ValueError, match="mode"):
        ablated_logits(model, tokens, 0, 0, mode="resample")
    with pytest.raises(TypeError, match="model"):
        head_ablation_losses("gpt", tokens, 0, 0)
    with pytest.raises(ValueError, match="pre-norm"):
        ablated_logits(GPT(GPTConfig(**{**CFG.to_dict(), "norm": "post"})), tokens, 0, 0)
    with pytest.raises(ValueError, match="2 positions"):
        head_ablation_losses(model, tokens[:, :1], 0, 0)
    with pytest.raises(ValueError, match="same length"):
        inside_word([["a", "b"], ["c"]])
    with pytest.raises(TypeError, match="pieces"):
        inside_word([[1, 2]])
