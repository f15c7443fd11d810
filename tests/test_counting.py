"""Parameter counts against ``sum(p.numel())`` of real modules built on the meta device (no memory).

Oracles: ``transformers``' GPT2LMHeadModel (GPT-2 sizes and a GPT-3-shaped config), LlamaForCausalLM
and MixtralForCausalLM built from configs (no download), ``torch.nn.Transformer`` for 2017, and the
published figures of the GPT-3 walk-through (seed 001), which the code did not produce.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from course_utils.counting import parameters as counting
from course_utils.counting.parameters import (CATEGORIES, ModelConfig, active_parameters, count_encoder_decoder,
                                   count_parameters, group_counts)

transformers = pytest.importorskip("transformers")


def _on_meta(build):
    with torch.device("meta"):
        return build()


def _add(counts, category, n):
    counts[category] = counts.get(category, 0) + n


def _gpt2_categories(model) -> dict[str, int]:
    """Split each named parameter of a GPT2LMHeadModel into the counter's categories."""
    counts = {}
    for name, p in model.named_parameters():
        if name.endswith(("wte.weight",)):
            _add(counts, "embedding", p.numel())
        elif name.endswith("wpe.weight"):
            _add(counts, "positions", p.numel())
        elif ".ln_" in name:
            _add(counts, "norms", p.numel())
        elif "attn.c_attn" in name:  # Q, K and V side by side in one Conv1D
            for category in ("query", "key", "value"):
                _add(counts, category, p.numel() // 3)
        elif "attn.c_proj" in name:
            _add(counts, "output", p.numel())
        elif "mlp.c_fc" in name:
            _add(counts, "mlp_up", p.numel())
        elif "mlp.c_proj" in name:
            _add(counts, "mlp_down", p.numel())
        else:
            raise AssertionError(f"unmapped parameter {name}")
    return counts


_LLAMA_NAMES = {"embed_tokens": "embedding", "q_proj": "query", "k_proj": "key", "v_proj": "value",
                "o_proj": "output", "up_proj": "mlp_up", "gate_proj": "mlp_gate", "down_proj": "mlp_down",
                "layernorm": "norms", "model.norm": "norms", "lm_head": "unembedding", "mlp.gate.": "router"}


def _llama_categories(model) -> dict[str, int]:
    """Categories of a Llama/Mixtral model; Mixtral's fused expert gate_up_proj is split in half."""
    counts = {}
    for name, p in model.named_parameters():
        if name.endswith("experts.gate_up_proj"):
            _add(counts, "mlp_gate", p.numel() // 2)
            _add(counts, "mlp_up", p.numel() // 2)
            continue
        if name.endswith("experts.down_proj"):
            _add(counts, "mlp_down", p.numel())
            continue
        matches = [c for key, c in _LLAMA_NAMES.items() if key in name]
        if len(matches) != 1:
            raise AssertionError(f"parameter {name} maps to {matches}")
        _add(counts, matches[0], p.numel())
    return counts


def _nonzero(counts):
    return {k: v for k, v in counts.items() if k != "total" and v}


def _gpt2_model(cfg: ModelConfig):
    hf = transformers.GPT2Config(vocab_size=cfg.d_vocab, n_positions=cfg.n_ctx, n_embd=cfg.d_model,
                                 n_layer=cfg.n_layers, n_head=cfg.n_heads, n_inner=cfg.d_mlp)
    return _on_meta(lambda: transformers.GPT2LMHeadModel(hf))


@pytest.mark.parametrize("cfg", [counting.GPT2_SMALL, counting.GPT2_MEDIUM, counting.GPT2_LARGE, counting.GPT2_XL,
                                 ModelConfig(97, 16, 24, 3, 4, d_mlp=40)], ids=["small", "medium", "large", "xl", "tiny"])
def test_gpt2_sizes_match_transformers_per_category(cfg):
    model = _gpt2_model(cfg)
    assert _nonzero(count_parameters(cfg)) == _gpt2_categories(model)
    assert count_parameters(cfg)["total"] == sum(p.numel() for p in model.parameters())


def test_gpt2_small_is_the_published_count():
    assert count_parameters(counting.GPT2_SMALL)["total"] == 124_439_808


def test_gpt2_small_has_the_sizes_of_transformers_gpt2_defaults():
    # notebook 05 prints GPT-2 small's width and heads from GPT2_SMALL (transformers is a test-only oracle)
    hf, ours = transformers.GPT2Config(), counting.GPT2_SMALL
    assert (ours.d_model, ours.n_heads, ours.d_head, ours.n_layers, ours.d_vocab, ours.n_ctx) == (
        hf.n_embd, hf.n_head, hf.n_embd // hf.n_head, hf.n_layer, hf.vocab_size, hf.n_positions)


def test_gpt3_shaped_gpt2_matches_the_strict_count_and_builds_without_memory():
    model = _gpt2_model(counting.GPT3_175B)
    assert next(model.parameters()).device.type == "meta"
    assert count_parameters(counting.GPT3_175B)["total"] == sum(p.numel() for p in model.parameters())
    assert _nonzero(count_parameters(counting.GPT3_175B)) == _gpt2_categories(model)  # category by category
    assert count_parameters(counting.GPT3_175B)["total"] == 174_604_259_328  # the seed's strict count


def test_gpt3_weights_only_reproduces_the_walkthrough_table():
    counts = count_parameters(counting.GPT3_175B_WEIGHTS_ONLY)
    assert counts["embedding"] == counts["unembedding"] == 617_558_016
    for name in ("query", "key", "value", "output"):
        assert counts[name] == 14_495_514_624
    assert counts["mlp_up"] == counts["mlp_down"] == 57_982_058_496
    assert counts["total"] == 175_181_291_520
    per_layer = counting.attention_parameters(counting.GPT3_175B_WEIGHTS_ONLY)
    assert sum(per_layer.values()) == 603_979_776 == 96 * 6_291_456
    assert per_layer["query"] // 96 == 1_572_864
    shares = {k: v / counts["total"] for k, v in group_counts(counts).items()}
    assert round(100 * shares["attention"], 1) == 33.1 and round(100 * shares["mlp"], 1) == 66.2
    assert round(100 * shares["embedding"], 2) == 0.35


def _llama_model(cfg: ModelConfig, mixtral: bool = False):
    common = dict(vocab_size=cfg.d_vocab, hidden_size=cfg.d_model, intermediate_size=cfg.mlp_width,
                  num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.kv_heads,
                  max_position_embeddings=cfg.n_ctx, tie_word_embeddings=cfg.tie_embeddings)
    if mixtral:
        hf = transformers.MixtralConfig(num_local_experts=cfg.n_experts, num_experts_per_tok=cfg.experts_per_token, **common)
        return _on_meta(lambda: transformers.MixtralForCausalLM(hf))
    hf = transformers.LlamaConfig(attention_bias=cfg.bias, mlp_bias=cfg.bias, **common)
    return _on_meta(lambda: transformers.LlamaForCausalLM(hf))


_LLAMA_TINY = ModelConfig(101, 32, 48, 2, 6, n_kv_heads=2, d_mlp=80, mlp="swiglu", norm="rmsnorm",
                          positions="rotary", bias=False, tie_embeddings=False)


@pytest.mark.parametrize("cfg", [counting.LLAMA3_8B, _LLAMA_TINY, _LLAMA_TINY.with_(bias=True),
                                 _LLAMA_TINY.with_(tie_embeddings=True), _LLAMA_TINY.with_(n_kv_heads=1),
                                 _LLAMA_TINY.with_(n_kv_heads=None)],
                         ids=["llama3-8b", "tiny", "biases", "tied", "multi-query", "no-gqa"])
def test_llama_matches_transformers_per_category(cfg):
    model = _llama_model(cfg)
    assert _nonzero(count_parameters(cfg)) == _llama_categories(model)
    assert count_parameters(cfg)["total"] == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("cfg", [counting.MIXTRAL_8X7B, _LLAMA_TINY.with_(n_experts=4, experts_per_token=2)],
                         ids=["mixtral-8x7b", "tiny-moe"])
def test_mixtral_matches_transformers_per_category(cfg):
    model = _llama_model(cfg, mixtral=True)
    assert _nonzero(count_parameters(cfg)) == _llama_categories(model)
    assert count_parameters(cfg)["total"] == sum(p.numel() for p in model.parameters())


def test_mixtral_active_is_shared_parts_plus_two_experts_of_the_real_module():
    cfg = counting.MIXTRAL_8X7B
    model = _llama_model(cfg, mixtral=True)
    expert_tensors = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    active_oracle = sum(p.numel() for p in model.parameters()) - expert_tensors + expert_tensors * 2 // 8
    assert active_parameters(cfg)["total"] == active_oracle
    assert 46.6e9 < count_parameters(cfg)["total"] < 46.8e9 and 12.8e9 < active_oracle < 13.0e9


def test_dense_model_is_fully_active():
    assert active_parameters(counting.LLAMA3_8B) == count_parameters(counting.LLAMA3_8B)


@pytest.mark.parametrize("preset, final_norms", [(counting.TRANSFORMER_BASE, True), (counting.TRANSFORMER_BIG, True),
                                                  (counting.TRANSFORMER_BASE, False)])
def test_encoder_decoder_matches_torch_transformer(preset, final_norms):
    model = _on_meta(lambda: nn.Transformer(d_model=preset["d_model"], nhead=preset["n_heads"],
                                            num_encoder_layers=preset["n_layers"], num_decoder_layers=preset["n_layers"],
                                            dim_feedforward=preset["d_mlp"], batch_first=True))
    embedding = _on_meta(lambda: nn.Embedding(preset["d_vocab"], preset["d_model"]))
    blocks = sum(p.numel() for p in model.parameters())
    if not final_norms:  # nn.Transformer closes each stack with a LayerNorm; the 2017 post-norm model has none
        blocks -= model.encoder.norm.weight.numel() * 4
    counts = count_encoder_decoder(**preset, final_norms=final_norms)
    assert counts["total"] == blocks + embedding.weight.numel()
    assert counts["encoder"] == sum(p.numel() for p in model.encoder.parameters()) - (0 if final_norms else 2 * preset["d_model"])


def _torch_nn_decoder(cfg: ModelConfig) -> nn.Module:
    """A GPT-2-style decoder written with torch.nn layers only (until the course model is merged)."""
    layer = lambda: nn.ModuleDict({"ln1": nn.LayerNorm(cfg.d_model), "attn": nn.MultiheadAttention(cfg.d_model, cfg.n_heads),
                                   "ln2": nn.LayerNorm(cfg.d_model), "up": nn.Linear(cfg.d_model, cfg.mlp_width),
                                   "down": nn.Linear(cfg.mlp_width, cfg.d_model)})
    return nn.ModuleDict({"W_E": nn.Embedding(cfg.d_vocab, cfg.d_model), "W_pos": nn.Embedding(cfg.n_ctx, cfg.d_model),
                          "blocks": nn.ModuleList(layer() for _ in range(cfg.n_layers)), "ln_f": nn.LayerNorm(cfg.d_model)})


def test_torch_nn_decoder_matches():
    cfg = ModelConfig(211, 64, 96, 3, 8, d_mlp=200)
    model = _on_meta(lambda: _torch_nn_decoder(cfg))
    assert count_parameters(cfg)["total"] == sum(p.numel() for p in model.parameters())


def test_every_breakdown_has_every_category_and_sums_to_total():
    for cfg in counting.PRESETS.values():
        counts = count_parameters(cfg)
        assert set(counts) == set(CATEGORIES) | {"total"}
        assert sum(v for k, v in counts.items() if k != "total") == counts["total"]


@pytest.mark.parametrize("kwargs, field", [
    (dict(d_model=100, n_heads=12), "n_heads"), (dict(n_heads=12, n_kv_heads=5), "n_kv_heads"),
    (dict(d_model=0), "d_model"), (dict(n_layers=-1), "n_layers"), (dict(d_vocab=3.5), "d_vocab"),
    (dict(d_mlp=0), "d_mlp"), (dict(n_experts=2, experts_per_token=3), "experts_per_token"),
    (dict(mlp="swish"), "mlp"), (dict(norm="batchnorm"), "norm"), (dict(positions="alibi"), "positions"),
    (dict(n_ctx=True), "n_ctx")])
def test_bad_configs_name_the_field(kwargs, field):
    base = dict(d_vocab=100, n_ctx=8, d_model=96, n_layers=2, n_heads=12)
    with pytest.raises(ValueError, match=field):
        ModelConfig(**{**base, **kwargs})


def test_non_bool_flags_and_non_configs_are_type_errors():
    with pytest.raises(TypeError, match="bias"):
        ModelConfig(10, 8, 16, 1, 2, bias="yes")
    with pytest.raises(TypeError, match="cfg"):
        count_parameters({"d_model": 16})
    with pytest.raises(ValueError, match="counts"):
        group_counts({"total": 3})


_COURSE_GPT_NAMES = {"W_E": "embedding", "W_pos": "positions", "W_U": "unembedding",
                     "W_Q": "query", "b_Q": "query", "W_K": "key", "b_K": "key", "W_V": "value", "b_V": "value",
                     "W_O": "output", "b_O": "output", "W_in": "mlp_up", "b_in": "mlp_up",
                     "W_out": "mlp_down", "b_out": "mlp_down"}


def _course_gpt_categories(model) -> dict[str, int]:
    """Split each named parameter of notebook 09's GPT into the counter's categories."""
    counts = {}
    for name, p in model.named_parameters():
        *owner, leaf = name.split(".")
        category = "norms" if owner and owner[-1].startswith("ln") else _COURSE_GPT_NAMES.get(leaf)
        if category is None:
            raise AssertionError(f"unmapped parameter {name}")
        _add(counts, category, p.numel())
    return counts


@pytest.mark.parametrize("tie, bias", [(True, True), (False, True), (True, False), (False, False)])
def test_course_gpt_matches_the_counter_per_category(tie, bias):
    from course_utils.gpt.model import GPT, GPTConfig

    gpt_cfg = GPTConfig(d_vocab=97, n_ctx=16, d_model=24, n_heads=4, n_layers=3, d_mlp=40,
                        tie_embeddings=tie, bias=bias)
    model = _on_meta(lambda: GPT(gpt_cfg))
    cfg = ModelConfig(97, 16, 24, 3, 4, d_mlp=40, tie_embeddings=tie, bias=bias)
    assert _nonzero(count_parameters(cfg)) == _course_gpt_categories(model)
    assert count_parameters(cfg)["total"] == sum(p.numel() for p in model.parameters())


def test_course_gpt_at_gpt2_small_size_is_gpt2_small():
    from course_utils.gpt.model import GPT, GPTConfig

    s = counting.GPT2_SMALL
    model = _on_meta(lambda: GPT(GPTConfig(d_vocab=s.d_vocab, n_ctx=s.n_ctx, d_model=s.d_model,
                                           n_heads=s.n_heads, n_layers=s.n_layers)))
    assert sum(p.numel() for p in model.parameters()) == count_parameters(s)["total"] == 124_439_808


@pytest.mark.parametrize("cfg", [counting.GPT2_SMALL, counting.GPT2_MEDIUM])
def test_non_embedding_count_leaves_out_exactly_the_token_and_position_tables(cfg):
    model = _on_meta(lambda: transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=cfg.d_model, n_layer=cfg.n_layers, n_head=cfg.n_heads)))
    others = sum(p.numel() for name, p in model.named_parameters() if not name.endswith(("wte.weight", "wpe.weight")))
    assert counting.non_embedding_parameters(cfg) == others


def test_non_embedding_count_is_close_to_kaplans_12_layers_d_squared():
    # Kaplan et al. 2020: N ~ 12 n_layers d_model^2, exact for the weights-only GPT-3 (no biases or norms);
    # GPT-2 small's published non-embedding count is 85M
    assert counting.non_embedding_parameters(counting.GPT2_SMALL) == 85_056_000
    weights_only = counting.non_embedding_parameters(counting.GPT3_175B_WEIGHTS_ONLY)
    assert weights_only == 12 * 96 * 12288**2
    assert counting.non_embedding_parameters(counting.LLAMA3_8B) == 8_030_261_248 - 2 * 525_336_576
