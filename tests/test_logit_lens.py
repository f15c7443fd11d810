"""The logit lens on the course's committed GPT: its last layer is the model's own logits, its first what the
embedding alone predicts, and the readout's top tokens, probabilities and ranks agree with a plain softmax."""

import pytest
import torch

from course_utils.gpt.checkpoint import load_checkpoint
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.model import GPT
from course_utils.interp.logit_lens import lens_logits, lens_readout, lens_top_tokens, residual_stream


@pytest.fixture(scope="module")
def course():
    ckpt = load_checkpoint()
    tokens = torch.tensor([ckpt["tokenizer"].encode("ROMEO:\nBut soft, what light through yonder window breaks?")])
    return ckpt["model"], tokens


def test_last_layer_of_the_lens_is_the_models_logits(course):
    model, tokens = course
    lens = lens_logits(model, tokens)
    assert lens.shape == (model.cfg.n_layers + 1, 1, tokens.shape[1], model.cfg.d_vocab)
    torch.testing.assert_close(lens[-1], model(tokens), rtol=0, atol=1e-5)
    embed_only = model.ln_final(model.W_E[tokens] + model.W_pos[: tokens.shape[1]]) @ model.W_U  # written out
    torch.testing.assert_close(lens[0], embed_only, rtol=0, atol=1e-5)
    writes = model.residual_writes(tokens)  # the model's own split of the stream: the streams are its partial sums
    torch.testing.assert_close(residual_stream(model, tokens)[2], sum(list(writes.values())[:6]), rtol=0, atol=1e-5)


def test_readout_agrees_with_softmax_and_ranks(course):
    model, tokens = course
    nxt = tokens[0, 1:]
    reading = lens_readout(model, tokens[:, :-1], -1, int(nxt[-1]), k=3)
    probs = lens_logits(model, tokens[:, :-1])[:, 0, -1].softmax(-1)  # (layer, d_vocab)
    assert reading["top_ids"].shape == (model.cfg.n_layers + 1, 1, 3)
    torch.testing.assert_close(reading["top_probs"][:, 0], probs.sort(-1, descending=True).values[:, :3])
    torch.testing.assert_close(reading["target_prob"][:, 0], probs[:, int(nxt[-1])])
    expected_rank = (probs > probs[:, int(nxt[-1])][:, None]).sum(-1)
    assert torch.equal(reading["target_rank"][:, 0], expected_rank)
    top_id = int(lens_readout(model, tokens, -1, 0)["top_ids"][-1, 0, 0])  # the model's own top token has rank 0
    assert int(lens_readout(model, tokens, -1, top_id)["target_rank"][-1, 0]) == 0


def test_a_batch_of_targets_and_the_argument_checks():
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_vocab=11, n_ctx=8, d_model=8, n_heads=2, n_layers=2)).eval()
    tokens = torch.randint(0, 11, (3, 5))
    reading = lens_readout(model, tokens, 2, torch.tensor([0, 1, 2]), k=2)
    assert reading["target_prob"].shape == (3, 3) and reading["top_ids"].shape == (3, 3, 2)
    with pytest.raises(TypeError, match="model"):
        lens_readout(torch.nn.Linear(2, 2), tokens, 0, 1)
    with pytest.raises(ValueError, match="model"):
        lens_logits(GPT(GPTConfig(d_vocab=11, n_ctx=8, d_model=8, n_heads=2, n_layers=1, norm="post")), tokens)
    with pytest.raises(ValueError, match="position"):
        lens_readout(model, tokens, 5, 1)
    with pytest.raises(ValueError, match="target"):
        lens_readout(model, tokens, 0, 11)
    with pytest.raises(ValueError, match="target"):
        lens_readout(model, tokens, 0, torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="target"):
        lens_readout(model, tokens, 0, torch.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="k"):
        lens_readout(model, tokens, 0, 1, k=12)


def test_top_tokens_at_every_position_agree_with_the_readout_at_each(course):
    model, tokens = course
    table = lens_top_tokens(model, tokens)
    assert table["top_ids"].shape == table["top_probs"].shape == (model.cfg.n_layers + 1, 1, tokens.shape[1])
    for position in range(tokens.shape[1]):  # the oracle: lens_readout, one position at a time
        reading = lens_readout(model, tokens, position, 0, k=1)
        assert torch.equal(table["top_ids"][:, :, position], reading["top_ids"][..., 0])
        torch.testing.assert_close(table["top_probs"][:, :, position], reading["top_probs"][..., 0])
    assert torch.equal(table["top_ids"][-1], model(tokens).argmax(-1))  # the last layer: the model's own guess
