"""FLOPs and memory against measurements: FlopCounterMode on real forward/backward passes, the bytes of
a real Adam optimizer's state, the KV cache a ``transformers`` model really keeps, and the published
training estimate of GPT-3 (3.14e23 FLOPs for 300B tokens)."""

from __future__ import annotations

import pytest
import torch

from course_utils.counting import compute, parameters as counting
from course_utils.counting.parameters import ModelConfig, count_parameters
from course_utils.counting.decoder import Decoder

transformers = pytest.importorskip("transformers")

_GPT2_TINY = ModelConfig(97, 32, 64, 2, 4)
_LLAMA_TINY = ModelConfig(89, 32, 48, 2, 6, n_kv_heads=2, d_mlp=80, mlp="swiglu", norm="rmsnorm",
                          positions="rotary", bias=False, tie_embeddings=False)


def _tokens(cfg, batch=2, pos=11, seed=0):
    return torch.randint(0, cfg.d_vocab, (batch, pos), generator=torch.Generator().manual_seed(seed))


def _eager(model):
    model.config._attn_implementation = "eager"  # attention as two visible matrix products
    return model


def _hf_gpt2(cfg):
    torch.manual_seed(0)
    hf = transformers.GPT2Config(vocab_size=cfg.d_vocab, n_positions=cfg.n_ctx, n_embd=cfg.d_model,
                                 n_layer=cfg.n_layers, n_head=cfg.n_heads, bos_token_id=0, eos_token_id=0)
    return _eager(transformers.GPT2LMHeadModel(hf))


def _hf_llama(cfg):
    torch.manual_seed(0)
    hf = transformers.LlamaConfig(vocab_size=cfg.d_vocab, hidden_size=cfg.d_model, intermediate_size=cfg.mlp_width,
                                  num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads,
                                  num_key_value_heads=cfg.kv_heads, tie_word_embeddings=cfg.tie_embeddings,
                                  bos_token_id=0, eos_token_id=0)
    # eager: on CPU, FlopCounterMode does not see the fused kernel of grouped-query sdpa
    return _eager(transformers.LlamaForCausalLM(hf))


@pytest.mark.parametrize("cfg, build", [(_GPT2_TINY, _hf_gpt2), (_LLAMA_TINY, _hf_llama)], ids=["gpt2", "llama-gqa"])
def test_forward_and_training_flops_match_flop_counter_on_transformers_models(cfg, build):
    model, tokens = build(cfg), _tokens(cfg)
    expected = compute.forward_flops(cfg, seq_len=tokens.shape[1], batch=tokens.shape[0])["total"]
    assert compute.measure_flops(model, tokens) == expected
    assert compute.measure_flops(model, tokens, backward=True) == 3 * expected  # forward + backward = 6N per token


@pytest.mark.parametrize("cfg", [_GPT2_TINY, _LLAMA_TINY, _LLAMA_TINY.with_(n_experts=4, experts_per_token=2),
                                 _GPT2_TINY.with_(mlp="geglu", norm="none", n_kv_heads=1)],
                         ids=["gpt2", "llama", "moe", "geglu-mqa"])
def test_torch_nn_decoder_flops_and_parameters(cfg):
    torch.manual_seed(0)
    model, tokens = Decoder(cfg), _tokens(cfg, batch=3, pos=9)
    assert sum(p.numel() for p in model.parameters()) == count_parameters(cfg)["total"]
    expected = compute.forward_flops(cfg, seq_len=9, batch=3)["total"]
    assert compute.measure_flops(model, tokens) == expected  # MoE: each token really runs through k experts


@pytest.mark.parametrize("cfg", [_GPT2_TINY, _LLAMA_TINY.with_(n_experts=4, experts_per_token=2)], ids=["gpt2", "moe"])
def test_flops_by_operation_match_the_flop_counter_module_by_module(cfg):
    """Each operation against FlopCounterMode's count for the modules that run it (the attention module's
    own products, outside its four projections, are the scores and the reduce over the values)."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model, tokens = Decoder(cfg), _tokens(cfg, batch=3, pos=9)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(tokens)
    per_module = {name: sum(ops.values()) for name, ops in counter.get_flop_counts().items()}

    def measured(*suffixes):  # FLOPs per token of every module whose name ends with one of the suffixes
        return sum(n for name, n in per_module.items() if name.endswith(suffixes)) // tokens.numel()

    ours = compute.forward_flops_by_operation(cfg, seq_len=9)
    projections = measured(".attn.W_Q", ".attn.W_K", ".attn.W_V", ".attn.W_O")
    assert ours["qkv"] == measured(".attn.W_Q", ".attn.W_K", ".attn.W_V")
    assert ours["output"] == measured(".attn.W_O")
    assert ours["scores"] == ours["reduce"] and ours["scores"] + ours["reduce"] == measured(".attn") - projections
    assert ours["mlp"] == measured(".mlp")
    assert ours["unembedding"] == measured("Decoder") - measured(".attn", ".mlp")  # tied: a product in Decoder itself
    assert ours["total"] == compute.forward_flops_per_token(cfg, 9) == sum(v for k, v in ours.items() if k != "total")


def test_flops_by_operation_worked_example_gpt3():
    """GPT-3 at 2,048 tokens, by hand: 2 · 96 · 12,288 · 36,864 for Q, K and V, 2 · 96 · 2,048 · 12,288 for the
    scores and for the reduce, 2 · 96 · 12,288² for W_O, 2 · 96 · 2 · 12,288 · 49,152 for the MLP."""
    flops = compute.forward_flops_by_operation(counting.GPT3_175B, 2048)
    assert flops["qkv"] == 2 * 96 * 12288 * 3 * 12288 == 86_973_087_744
    assert flops["scores"] == flops["reduce"] == 2 * 96 * 2048 * 12288 == 4_831_838_208
    assert flops["output"] == 2 * 96 * 12288**2 and flops["mlp"] == 2 * 96 * 2 * 12288 * 49152
    assert flops["unembedding"] == 2 * 12288 * 50257
    with pytest.raises(ValueError, match="seq_len"):
        compute.forward_flops_by_operation(counting.GPT3_175B, 0)


def test_moe_costs_follow_active_parameters_not_total():
    moe = _LLAMA_TINY.with_(n_experts=8, experts_per_token=2)
    report = compute.moe_capacity_and_cost(moe, seq_len=16)
    two_experts = _LLAMA_TINY.with_(d_mlp=2 * _LLAMA_TINY.mlp_width)  # a dense model with the same active MLP width
    extra_router = 2 * moe.n_layers * moe.d_model * moe.n_experts
    assert report["flops_per_token"] == compute.forward_flops_per_token(two_experts, 16) + extra_router
    assert report["total_parameters"] > 3 * report["active_parameters"]


def test_gpt3_training_estimate_is_the_published_one():
    n = count_parameters(counting.GPT3_175B)["total"]
    assert 3.1e23 < compute.training_flops(n, 300e9) < 3.2e23  # Brown et al. 2020: 3.14e23
    assert compute.approximate_forward_flops(counting.GPT3_175B) == pytest.approx(2 * 174e9, rel=0.01)


@pytest.mark.parametrize("dtype, precision", [(torch.float32, "float32"), (torch.bfloat16, "bfloat16")])
def test_training_memory_matches_a_real_adam_step(dtype, precision):
    torch.manual_seed(0)
    model = Decoder(_GPT2_TINY).to(dtype)
    optimizer = torch.optim.Adam(model.parameters())
    model(_tokens(_GPT2_TINY)).float().sum().backward()
    optimizer.step()
    params = list(model.parameters())

    def nbytes(tensors):
        return sum(t.numel() * t.element_size() for t in tensors)

    states = [s for p in params for key, s in optimizer.state[p].items() if key != "step"]
    got = compute.training_memory(sum(p.numel() for p in params), precision)
    assert got["weights"] == nbytes(params) and got["gradients"] == nbytes(p.grad for p in params)
    assert got["adam_m"] + got["adam_v"] == nbytes(states)
    assert got["total"] == nbytes(params) + nbytes(p.grad for p in params) + nbytes(states)


def test_mixed_precision_keeps_sixteen_bytes_per_parameter():
    assert compute.training_memory(1000, "mixed")["total"] == compute.training_memory(1000, "float32")["total"]
    assert compute.training_memory(1000, "bfloat16")["total"] * 2 == compute.training_memory(1000, "float32")["total"]


@pytest.mark.parametrize("cfg", [_LLAMA_TINY, _LLAMA_TINY.with_(n_kv_heads=None)], ids=["gqa", "mha"])
def test_kv_cache_matches_the_cache_transformers_keeps(cfg):
    model = _hf_llama(cfg).to(torch.bfloat16)
    tokens = _tokens(cfg, batch=1, pos=7)
    cache = model(tokens, use_cache=True).past_key_values
    kept = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    assert compute.kv_cache_bytes_per_token(cfg, bytes_per_value=2) * 7 == kept


def test_gqa_shrinks_the_kv_cache_by_the_group_size():
    cfg = counting.LLAMA3_8B
    assert compute.kv_cache_bytes_per_token(cfg.with_(n_kv_heads=None)) == 4 * compute.kv_cache_bytes_per_token(cfg)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="seq_len"):
        compute.forward_flops(_GPT2_TINY, 0)
    with pytest.raises(ValueError, match="precision"):
        compute.training_memory(10, "fp8")
    with pytest.raises(ValueError, match="n_tokens"):
        compute.training_flops(10, -1)
    with pytest.raises(ValueError, match="n_tokens must be a positive finite number, got inf"):
        compute.training_flops(10, float("inf"))
    with pytest.raises(TypeError, match="n_params must be a number, got bool"):
        compute.training_flops(True, 10)
    assert compute.training_flops(10, 20) == 1200 and isinstance(compute.training_flops(10, 20), int)
    with pytest.raises(TypeError, match="cfg"):
        compute.kv_cache_bytes_per_token("llama")
    with pytest.raises(ValueError, match="tokens"):
        Decoder(_GPT2_TINY)(torch.zeros(1, 40, dtype=torch.long))


@pytest.mark.gpu
def test_decoder_and_flop_count_follow_cuda():
    cfg = _LLAMA_TINY.with_(n_experts=4, experts_per_token=2)
    torch.manual_seed(0)
    model, tokens = Decoder(cfg), _tokens(cfg, batch=3, pos=9)
    expected = model(tokens)
    on_gpu = model.to("cuda")
    got = on_gpu(tokens.to("cuda"))
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-4)
    assert compute.measure_flops(on_gpu, tokens.to("cuda")) == compute.forward_flops(cfg, 9, 3)["total"]
