"""GPT-2 weights in the course model: a random GPT2LMHeadModel built from a transformers config (no
download) gives the same logits (max |Δ| <= 1e-5, float32) once loaded, from safetensors and from a
pytorch_model.bin; GPT-2 small's parameter count; clear errors for missing, corrupt or mis-shaped files."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from course_utils.gpt.model import GPT  # noqa: E402
from course_utils.gpt.gpt2_weights import gpt2_config, gpt2_small_config, load_gpt2, read_weights  # noqa: E402


def _hf(seed=0, **kw):
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(vocab_size=97, n_positions=24, n_embd=48, n_layer=2, n_head=4,
                                  bos_token_id=0, eos_token_id=0, **kw)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # random biases and LayerNorm parameters too, so a swapped mapping shows
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


def _tokens(seed=1):
    return torch.randint(0, 97, (2, 24), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_safetensors_folder_gives_the_same_logits(tmp_path, impl):
    hf = _hf()
    hf.save_pretrained(tmp_path, safe_serialization=True)
    assert (tmp_path / "model.safetensors").is_file()
    ours = load_gpt2(tmp_path)
    with torch.no_grad():
        diff = (ours(_tokens(), impl=impl) - hf(_tokens()).logits).abs().max()
    assert float(diff) <= 1e-5


def test_pytorch_model_bin_with_a_config_gives_the_same_logits(tmp_path):
    hf = _hf(seed=3, n_inner=80)
    torch.save(hf.state_dict(), tmp_path / "pytorch_model.bin")
    ours = load_gpt2(tmp_path / "pytorch_model.bin", gpt2_config(hf.config))
    with torch.no_grad():
        assert float((ours(_tokens()) - hf(_tokens()).logits).abs().max()) <= 1e-5


def test_gpt2_small_has_the_parameter_count_of_transformers():
    with torch.device("meta"):
        ours = GPT(gpt2_small_config())
        theirs = transformers.GPT2LMHeadModel(transformers.GPT2Config())
    assert ours.cfg.d_head == 64 and ours.cfg.n_layers == 12
    assert ours.num_params() == sum(p.numel() for p in theirs.parameters())
    assert gpt2_config(transformers.GPT2Config()) == gpt2_small_config()


def test_missing_corrupt_and_mismatched_files_get_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_weights(tmp_path / "nope.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"\x00not a safetensors file")
    with pytest.raises(ValueError, match="corrupt"):
        read_weights(tmp_path / "bad.safetensors")
    (tmp_path / "bad.bin").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match="corrupt"):
        read_weights(tmp_path / "bad.bin")
    hf = _hf()
    torch.save(hf.state_dict(), tmp_path / "pytorch_model.bin")
    wrong = gpt2_config(hf.config)
    wrong.d_model, wrong.n_heads = 64, 4
    with pytest.raises(ValueError, match="c_attn.weight has shape \\(48, 144\\), the config needs \\(64, 192\\)"):
        load_gpt2(tmp_path / "pytorch_model.bin", wrong)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds none of"):
        load_gpt2(tmp_path / "empty", wrong)
