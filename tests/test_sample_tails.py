"""sample_tails: the tokens are generate's (same seed, with the cache), each recorded probability is
the unfiltered softmax of a full forward pass at that position (the oracle), top-1 records the
largest probability, top-k never draws below the k-th, and clear errors."""

import pytest
import torch

from course_utils.gpt.generation import generate
from course_utils.gpt.model import GPTConfig
from tiny_models import sharp_gpt
from course_utils.gpt.sample_tails import sampled_probabilities

CFG = GPTConfig(d_vocab=41, n_ctx=16, d_model=24, n_heads=3, n_layers=2, d_mlp=40)


def _model():
    return sharp_gpt(CFG)


PROMPT = torch.randint(0, CFG.d_vocab, (3, 4), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("kw", [{}, {"top_k": 5}, {"top_p": 0.8, "temperature": 0.7}])
def test_tokens_are_generates_and_probs_are_the_full_forward_softmax(kw):
    model = _model()
    got = sampled_probabilities(model, PROMPT, 12, generator=torch.Generator().manual_seed(3), **kw)
    expected = generate(model, PROMPT, 12, generator=torch.Generator().manual_seed(3), **kw)
    assert torch.equal(got["tokens"], expected)
    with torch.no_grad():
        probs = model(expected[:, :-1]).softmax(-1)[:, 3:]  # (batch, 12, d_vocab): positions that chose a token
    oracle = probs.gather(-1, expected[:, 4:, None])[..., 0]
    torch.testing.assert_close(got["probs"], oracle, rtol=1e-5, atol=1e-6)


def test_top_1_records_the_largest_probability_and_top_k_stays_above_the_kth():
    model = _model()
    tokens = sampled_probabilities(model, PROMPT, 12, generator=torch.Generator().manual_seed(0), top_k=3)["tokens"]
    with torch.no_grad():
        probs = model(tokens[:, :-1]).softmax(-1)[:, 3:]
    kth = probs.topk(3, dim=-1).values[..., -1]
    got = sampled_probabilities(model, PROMPT, 12, generator=torch.Generator().manual_seed(0), top_k=3)["probs"]
    assert bool((got >= kth - 1e-6).all())
    greedy = sampled_probabilities(model, PROMPT, 12, generator=torch.Generator().manual_seed(0), top_k=1)
    with torch.no_grad():
        top = model(greedy["tokens"][:, :-1]).softmax(-1)[:, 3:].max(-1).values
    torch.testing.assert_close(greedy["probs"], top, rtol=1e-5, atol=1e-6)


def test_bad_input():
    model = _model()
    with pytest.raises(ValueError, match="n_ctx"):
        sampled_probabilities(model, PROMPT, 14)
    with pytest.raises(ValueError, match="temperature"):
        sampled_probabilities(model, PROMPT, 3, temperature=-1.0)
    with pytest.raises(TypeError, match="model"):
        sampled_probabilities("gpt", PROMPT, 3)
    assert sampled_probabilities(model, PROMPT, 0)["probs"].shape == (3, 0)
