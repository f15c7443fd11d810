"""The Llama-style block and model (course_utils.llama) against transformers' LlamaDecoderLayer and
LlamaForCausalLM, built from a LlamaConfig (nothing downloaded) with random weights copied across:
float32, several shapes (n_kv_heads < n_heads included), both RoPE layouts."""

from __future__ import annotations

import pytest
import torch

from course_utils.llama import Llama, config_from_transformers, load_llama, load_llama_block, rotate_queries_keys
from course_utils.moe import SwiGLU
from course_utils.tolerances import tolerance
from llama_oracle import assert_close, hf_config, randomise

transformers = pytest.importorskip("transformers")
from transformers.models.llama.modeling_llama import (  # noqa: E402 (after the skip)
    LlamaDecoderLayer,
    LlamaMLP,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

SHAPES = {  # d_model, n_heads, n_kv_heads, n_layers, d_mlp
    "mha": (32, 4, 4, 2, 80),
    "gqa": (48, 6, 2, 2, 128),
    "mqa": (64, 4, 1, 1, 96),
    "gqa-3-layers": (32, 8, 2, 3, 64),
}
LAYOUTS = ["halves", "interleaved"]


def _hf_config(*shape):
    return hf_config(transformers, *shape, rope_theta=1000.0)  # a base other than 10,000: the conversion must carry it


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_block_equals_llama_decoder_layer(shape, layout):
    hc = _hf_config(*SHAPES[shape])
    layer = randomise(LlamaDecoderLayer(hc, layer_idx=0))
    block = load_llama_block(layer, config_from_transformers(hc, layout))
    x = torch.randn(2, 11, hc.hidden_size, generator=torch.Generator().manual_seed(1))
    positions = torch.arange(11)[None].expand(2, -1)  # (batch, pos)
    future = torch.ones(11, 11, dtype=torch.bool).triu(1)
    additive_mask = torch.zeros(11, 11).masked_fill(future, float("-inf"))[None, None]  # (1, 1, q_pos, k_pos)
    with torch.no_grad():
        theirs = layer(x, attention_mask=additive_mask, position_ids=positions,
                       position_embeddings=LlamaRotaryEmbedding(hc)(x, positions))
        ours = block(x)
    assert_close(f"block {shape} {layout}", ours, theirs)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_model_equals_llama_for_causal_lm(shape, layout):
    hf = randomise(transformers.LlamaForCausalLM(_hf_config(*SHAPES[shape])), seed=2)
    model = load_llama(hf, layout)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in hf.parameters())
    tokens = torch.randint(0, 97, (2, 13), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        theirs = hf(tokens).logits
        ours, fused = model(tokens), model(tokens, impl="fused")
    assert_close(f"model {shape} {layout}", ours, theirs)
    assert_close(f"model {shape} {layout} fused", fused, theirs)


def test_the_layouts_differ_without_the_conversion():
    """The conversion is needed: interleaved RoPE on the rotate-half weights, unpermuted, is another model."""
    hf = randomise(transformers.LlamaForCausalLM(_hf_config(*SHAPES["gqa"])), seed=2)
    model = load_llama(hf, "halves")
    wrong = Llama(model.cfg.with_(rope_layout="interleaved"))
    wrong.load_state_dict(model.state_dict())  # interleaved pairs, weights not permuted
    tokens = torch.randint(0, 97, (2, 13), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert (wrong(tokens) - model(tokens)).abs().max() > 1e-2


def test_config_from_transformers_reads_every_field_and_refuses_what_the_course_leaves_out():
    hc = _hf_config(48, 6, 2, 2, 128)
    cfg = config_from_transformers(hc, "interleaved")
    assert (cfg.d_vocab, cfg.n_ctx, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.d_mlp) == (
        97, 32, 48, 2, 6, 2, 128)
    assert (cfg.rope_base, cfg.rope_layout, cfg.eps) == (1000.0, "interleaved", 1e-5)
    refused = [({"tie_word_embeddings": True}, "tie_word_embeddings"), ({"attention_bias": True}, "attention_bias"),
               ({"mlp_bias": True}, "mlp_bias"), ({"hidden_act": "gelu"}, "hidden_act 'gelu'"),
               ({"head_dim": 16}, "head_dim"),
               ({"rope_parameters": {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0}}, "rope_type 'linear'")]
    for change, named in refused:
        bad = _hf_config(48, 6, 2, 2, 128)
        for key, value in change.items():
            setattr(bad, key, value)
        with pytest.raises(ValueError, match=named):
            config_from_transformers(bad)
    with pytest.raises(TypeError, match="hf_config must be a transformers LlamaConfig"):
        config_from_transformers(transformers.GPT2Config())
    with pytest.raises(ValueError, match="rope_layout must be one of"):
        config_from_transformers(hc, "pairs")
    with pytest.raises(TypeError, match="hf_model must be a transformers LlamaForCausalLM"):
        load_llama(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="layer must be a transformers LlamaDecoderLayer"):
        load_llama_block(torch.nn.Linear(2, 2), cfg)
    with pytest.raises(ValueError, match="cfg says d_model=48"):
        load_llama_block(LlamaDecoderLayer(_hf_config(32, 4, 4, 1, 64), 0), cfg)


def test_the_swiglu_layer_equals_transformers_llama_mlp():
    hc = transformers.LlamaConfig(hidden_size=16, intermediate_size=64, num_attention_heads=2)
    theirs, ours = LlamaMLP(hc), SwiGLU(16, 64)
    with torch.no_grad():
        ours.W_gate.copy_(theirs.gate_proj.weight.T), ours.W_in.copy_(theirs.up_proj.weight.T)
        ours.W_out.copy_(theirs.down_proj.weight.T)
        x = torch.randn(3, 5, 16, generator=torch.Generator().manual_seed(0))
        rtol, atol = tolerance(torch.float32)
        torch.testing.assert_close(ours(x), theirs(x), rtol=rtol, atol=atol)


@pytest.mark.parametrize("offset", [0, 7])
def test_rotation_at_an_offset_equals_transformers_rotary_embedding(offset):
    """transformers computes the angles in float32, the course in float64 (their angles differ by about
    1e-9 rad per position, 1.3e-6 rad at position 1000 for base 1000): equal to float32 rounding here."""
    hc = _hf_config(*SHAPES["gqa"])
    g = torch.Generator().manual_seed(4)
    q, k = torch.randn(2, 6, 5, 8, generator=g), torch.randn(2, 2, 5, 8, generator=g)  # (batch, head, pos, d_head)
    positions = torch.arange(offset, offset + 5)[None]  # (1, pos)
    cos, sin = LlamaRotaryEmbedding(hc)(q, positions)
    theirs_q, _ = apply_rotary_pos_emb(q, q, cos, sin)
    _, theirs_k = apply_rotary_pos_emb(k, k, cos, sin)
    ours_q, ours_k = rotate_queries_keys(q, k, offset, base=1000.0, layout="halves")
    assert_close(f"rotary q offset {offset}", ours_q, theirs_q)
    assert_close(f"rotary k offset {offset}", ours_k, theirs_k)
    if offset:
        assert (rotate_queries_keys(q, k, 0, base=1000.0)[0] - theirs_q).abs().max() > 1e-2
