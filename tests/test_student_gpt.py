"""Notebooks 09's and 11's own solutions (``SmallGPT`` and the classes it is built from, ``convert_gpt2_weights``, read
from the notebook's source by ``tools.mutation.sources.namespace``, no cell run) load GPT-2's tensors: a random
``GPT2LMHeadModel`` from a ``transformers`` config (no download), converted by ``gpt2_weights`` or by the
notebook's own converter, gives Hugging Face's logits in the student's class as in the course's, which is what
the notebook's prose claims for keeping the course's parameter names. ``gpt2_weights.to_gpt2_state_dict``,
the layout the notebook's check builds its cases in, is tested here against the same oracle: a course model
written out in it runs in ``GPT2LMHeadModel`` with the course model's logits."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from course_utils.gpt.model import GPT  # noqa: E402
from course_utils.gpt.gpt2_weights import convert_gpt2_state_dict, gpt2_config, to_gpt2_state_dict  # noqa: E402
from tools.mutation.sources import namespace  # noqa: E402

HF_CFG = dict(vocab_size=97, n_positions=24, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)


@pytest.fixture(scope="module")
def hf():
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**HF_CFG)).eval()
    with torch.no_grad():  # random biases and LayerNorm parameters too, so a swapped mapping shows
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


@pytest.fixture(scope="module")
def notebook():
    return namespace("build_gpt") | namespace("generate_gpt")


def _tokens():
    return torch.randint(0, 97, (2, 24), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("converter", ["course", "notebook"])
def test_the_notebooks_small_gpt_runs_gpt2_weights(hf, notebook, converter):
    cfg = gpt2_config(hf.config)
    convert = convert_gpt2_state_dict if converter == "course" else notebook["convert_gpt2_weights"]
    student = notebook["SmallGPT"](cfg)
    student.load_state_dict(convert(hf.state_dict(), cfg))  # strict: every name must match
    with torch.no_grad():
        theirs, ours = hf(_tokens()).logits, student(_tokens())
    assert cfg.tie_embeddings and student.W_U is None
    assert (ours - theirs).abs().max() <= 1e-5


def test_to_gpt2_state_dict_runs_in_transformers_and_converts_back(hf):
    cfg = gpt2_config(hf.config)
    course = GPT(cfg)
    course.reset_parameters(torch.Generator().manual_seed(3))
    with torch.no_grad():
        for p in course.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(4)))
    theirs = transformers.GPT2LMHeadModel(hf.config).eval()
    missing, unexpected = theirs.load_state_dict(to_gpt2_state_dict(course), strict=False)
    assert not unexpected and all(k.endswith((".attn.bias", ".attn.masked_bias")) for k in missing)
    with torch.no_grad():
        assert (theirs(_tokens()).logits - course(_tokens())).abs().max() <= 1e-5
    back = convert_gpt2_state_dict(to_gpt2_state_dict(course), cfg)
    assert back.keys() == course.state_dict().keys()
    assert all(torch.equal(back[k], v) for k, v in course.state_dict().items())
    with pytest.raises(TypeError, match="model"):
        to_gpt2_state_dict(hf)
