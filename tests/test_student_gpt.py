"""Notebook 09's own solution classes (``SmallGPT`` and the classes it is built from, read from the
notebook's source by ``tools.mutation.sources.namespace``, no cell run) load GPT-2's tensors: a random
``GPT2LMHeadModel`` from a ``transformers`` config (no download), converted by ``gpt2_weights``, gives
Hugging Face's logits in the student's class as in the course's, which is what the notebook's prose
claims for keeping the course's parameter names."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from course_utils.gpt2_weights import convert_gpt2_state_dict, gpt2_config  # noqa: E402
from tools.mutation.sources import namespace  # noqa: E402


def test_the_notebooks_small_gpt_runs_gpt2_weights():
    torch.manual_seed(0)
    hf_cfg = transformers.GPT2Config(vocab_size=97, n_positions=24, n_embd=48, n_layer=2, n_head=4,
                                     bos_token_id=0, eos_token_id=0)
    hf = transformers.GPT2LMHeadModel(hf_cfg).eval()
    with torch.no_grad():  # random biases and LayerNorm parameters too, so a swapped mapping shows
        for p in hf.parameters():
            p.add_(0.05 * torch.randn_like(p))
    cfg = gpt2_config(hf_cfg)
    student = namespace("small_gpt")["SmallGPT"](cfg)
    student.load_state_dict(convert_gpt2_state_dict(hf.state_dict(), cfg))  # strict: every name must match
    tokens = torch.randint(0, 97, (2, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        theirs, ours = hf(tokens).logits, student(tokens)
    assert cfg.tie_embeddings and student.W_U is None
    assert (ours - theirs).abs().max() <= 1e-5
