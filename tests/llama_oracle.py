"""What the tests that hold a Llama-style model against ``transformers`` share: a config built with no download,
weights randomised so that nothing stays at its default, and float32 agreement relative to the output's scale.
Used by tests/test_llama_transformers.py (the course's reference) and tests/test_student_llama.py (notebook 12's
solution); both import ``transformers`` themselves, after ``pytest.importorskip``."""

import torch

from course_utils.tolerances import tolerance


def hf_config(transformers, d_model, n_heads, n_kv_heads, n_layers, d_mlp, rope_theta=10_000.0):
    return transformers.LlamaConfig(
        vocab_size=97, hidden_size=d_model, intermediate_size=d_mlp, num_hidden_layers=n_layers,
        num_attention_heads=n_heads, num_key_value_heads=n_kv_heads, max_position_embeddings=32,
        rope_theta=rope_theta, rms_norm_eps=1e-5, attn_implementation="eager",
    )  # fmt: skip


def randomise(module, seed=0):
    """Every weight random (std 0.2), every RMSNorm gain 1 + 0.2 · noise: nothing left at its default."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            noise = 0.2 * torch.randn(p.shape, generator=g)
            p.copy_(1 + noise if p.ndim == 1 else noise)
    return module.eval()


def assert_close(name, ours, theirs):
    """Float32 agreement relative to the output's scale: |ours - theirs| <= rtol · max|theirs| + atol."""
    rtol, atol = tolerance(torch.float32)
    diff = (ours - theirs).abs().max().item()
    assert diff <= rtol * theirs.abs().max().item() + atol, f"{name}: max abs difference {diff:.3g}"
