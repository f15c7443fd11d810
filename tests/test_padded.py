"""A batch of prompts of different lengths, left-padded (``course_utils.gpt.padded``), against the oracle of each
prompt alone: ``GPT``'s logits at a padded prompt's real positions, and ``generate``'s greedy tokens for every row
of ``sample_padded`` (the reference of notebook 09's ``sample_tokens``), past the context too. The notebook's own
``sample_tokens`` (read from its source) draws the reference's tokens."""

import pytest
import torch

from course_utils.gpt.generation import generate
from course_utils.gpt.model import GPT, GPTConfig
from course_utils.gpt.padded import PaddedGPT, sample_padded
from course_utils.masking import left_padded_batch
from tools.mutation.sources import namespace

CFG = GPTConfig(d_vocab=29, n_ctx=10, d_model=16, n_heads=2, n_layers=2)
PROMPTS = [[3, 4, 5, 6], [7], [8, 9, 10, 11, 12, 13, 14]]


@pytest.fixture(scope="module")
def models():
    course = GPT(CFG)
    course.reset_parameters(torch.Generator().manual_seed(0))
    with torch.no_grad():  # off the init, so every parameter matters
        for p in course.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    padded = PaddedGPT(CFG)
    padded.load_state_dict(course.state_dict())
    return course.eval(), padded.eval()


def test_a_padded_prompt_gets_its_logits_alone(models):
    course, padded = models
    ids, mask, positions = left_padded_batch(PROMPTS, pad_id=3)  # 3 is a real token too
    with torch.no_grad():
        logits = padded(ids, mask, positions)
        for row, prompt in enumerate(PROMPTS):
            alone = course(torch.tensor([prompt]))[0]
            torch.testing.assert_close(logits[row, -len(prompt):], alone, rtol=0, atol=1e-5)
        torch.testing.assert_close(padded(ids), course(ids), rtol=0, atol=0)  # no mask, no positions: GPT's
    with pytest.raises(ValueError, match="mask"):
        padded(ids, mask.float(), positions)
    with pytest.raises(ValueError, match="positions"):
        padded(ids, mask, positions[:, 1:])


def test_each_row_of_the_batch_is_the_prompt_sampled_alone(models):
    course, padded = models
    out = sample_padded(padded, PROMPTS, 6, 0.0, pad_id=0)  # the longest passes n_ctx: its window slides
    assert out.shape == (3, 7 + 6)
    for row, prompt in zip(out, PROMPTS):
        alone = generate(course, torch.tensor([prompt]), 6, temperature=0, use_cache=False)[0]
        assert torch.equal(row[-len(alone):], alone)
    notebook = namespace("generate_gpt")["sample_tokens"]
    sampled = [f(padded, PROMPTS, 5, 0.9, torch.Generator().manual_seed(2), 0) for f in (sample_padded, notebook)]
    assert torch.equal(*sampled)
    with pytest.raises(ValueError, match="n_new"):
        sample_padded(padded, PROMPTS, 0, 1.0)
