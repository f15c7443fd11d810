"""Direct logit attribution on the course's committed GPT, in float64: the parts add up to the model's own logit
difference, and a head's part is what removing that head's write from the final stream changes in the readout
with the LayerNorm scale frozen (the head's write taken from the attention module's own per-head split)."""

import copy

import pytest
import torch

from course_utils.gpt.checkpoint import load_checkpoint
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.model import GPT
from course_utils.interp.attribution import component_writes, direct_logit_attribution
from course_utils.interp.logit_lens import residual_stream
from course_utils.masking import causal_mask


@pytest.fixture(scope="module")
def course64():
    ckpt = load_checkpoint()
    tok = ckpt["tokenizer"]
    rows = [tok.encode("ROMEO:\nWhat say you, my lord?\n\nJULIET:\nI say"),
            tok.encode("KING HENRY:\nNow, lords, to France; the enterprise wh")]
    n = min(len(r) for r in rows)
    return copy.deepcopy(ckpt["model"]).double(), torch.tensor([r[:n] for r in rows])


def test_parts_add_up_to_the_models_logit_difference(course64):
    model, tokens = course64
    a, b = torch.tensor([5, 17]), torch.tensor([40, 3])
    for position in (-1, 3):
        parts = direct_logit_attribution(model, tokens, position, a, b)
        logits = model(tokens)[:, position]
        whole = logits[torch.arange(2), a] - logits[torch.arange(2), b]
        torch.testing.assert_close(parts["total"], whole, rtol=0, atol=1e-10)
        torch.testing.assert_close(parts["logit_diff"], whole, rtol=0, atol=1e-12)
        assert parts["heads"].shape == (2, model.cfg.n_layers, model.cfg.n_heads)
        assert whole.abs().min() > 0.1  # a difference worth splitting, not zero by accident
    writes = component_writes(model, tokens)
    final = writes["embed"] + writes["heads"].sum((0, 2)) + writes["attn_bias"].sum(0) + writes["mlps"].sum(0)
    torch.testing.assert_close(final, residual_stream(model, tokens)[-1], rtol=0, atol=1e-12)


def test_a_heads_part_is_what_removing_its_direct_write_changes_at_frozen_scale(course64):
    model, tokens = course64
    position, a, b = -1, 5, 40
    parts = direct_logit_attribution(model, tokens, position, a, b)
    stream = residual_stream(model, tokens)  # (layer + 1, batch, pos, d_model)
    final = stream[-1][:, position]  # (batch, d_model)
    ln, W_U = model.ln_final, model.W_U
    scale = (final.var(-1, unbiased=False) + ln.eps).sqrt()[:, None]  # frozen from the clean run
    torch.testing.assert_close(parts["scale"], scale[:, 0], rtol=0, atol=1e-12)

    def frozen_readout(x):  # ln_final with the clean run's scale, then logit a minus logit b
        return (((x - x.mean(-1, keepdim=True)) / scale * ln.w + ln.b) @ (W_U[:, a] - W_U[:, b]))

    mask = causal_mask(tokens.shape[1])
    for layer, head in [(0, 1), (2, 3), (3, 0)]:
        block = model.blocks[layer]
        write = block.attn.per_head_contributions(block.ln1(stream[layer]), mask)[:, head, position]
        change = frozen_readout(final) - frozen_readout(final - write)
        torch.testing.assert_close(parts["heads"][:, layer, head], change, rtol=0, atol=1e-12)
        assert change.abs().max() > 1e-3  # the head writes something visible here
    true_readout = model.unembed(final)[:, a] - model.unembed(final)[:, b]
    torch.testing.assert_close(frozen_readout(final), true_readout, rtol=0, atol=1e-12)


def test_a_model_without_biases_and_the_argument_checks():
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_vocab=11, n_ctx=8, d_model=8, n_heads=2, n_layers=2, bias=False)).double().eval()
    tokens = torch.randint(0, 11, (3, 6))
    parts = direct_logit_attribution(model, tokens, 4, 1, torch.tensor([2, 3, 4]))
    assert torch.equal(parts["attn_bias"], torch.zeros(3, 2, dtype=torch.float64))
    assert torch.equal(parts["ln_bias"], torch.zeros(3, dtype=torch.float64))
    torch.testing.assert_close(parts["total"], parts["logit_diff"], rtol=0, atol=1e-12)
    with pytest.raises(TypeError, match="model"):
        direct_logit_attribution(object(), tokens, 0, 1, 2)
    with pytest.raises(ValueError, match="position"):
        direct_logit_attribution(model, tokens, -7, 1, 2)
    with pytest.raises(ValueError, match="token_b"):
        direct_logit_attribution(model, tokens, 0, 1, 11)
    with pytest.raises(TypeError, match="token_a"):
        direct_logit_attribution(model, tokens, 0, 1.5, 2)
