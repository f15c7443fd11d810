"""The Llama-style model (course_utils.llama): the KV-cache path against the full forward, notebook 08's
parameter counter against sum(p.numel()), the SwiGLU width and layer, and the argument checks."""

from __future__ import annotations

import pytest
import torch

from course_utils.counting import LLAMA3_8B, count_parameters
from course_utils.gpt.cache import KVCache
from course_utils.llama import Llama, LlamaBlock, LlamaConfig, swiglu_width, to_model_config
from course_utils.moe import SwiGLU
from course_utils.tolerances import tolerance

CONFIGS = {
    "mha": LlamaConfig(d_vocab=53, n_ctx=24, d_model=32, n_layers=2, n_heads=4),
    "gqa": LlamaConfig(d_vocab=53, n_ctx=24, d_model=48, n_layers=3, n_heads=6, n_kv_heads=2, d_mlp=100),
    "mqa-interleaved": LlamaConfig(d_vocab=70, n_ctx=24, d_model=32, n_layers=1, n_heads=4, n_kv_heads=1,
                                   rope_layout="interleaved", rope_base=500.0),
}


def _model(name, seed=0):
    return Llama(CONFIGS[name], generator=torch.Generator().manual_seed(seed)).eval()


def _tokens(cfg, pos=14, seed=1):
    return torch.randint(0, cfg.d_vocab, (2, pos), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("impl", ["reference", "fused"])
@pytest.mark.parametrize("name", CONFIGS)
def test_incremental_decoding_gives_the_logits_of_the_full_forward(name, impl):
    model = _model(name)
    tokens = _tokens(model.cfg)
    with torch.no_grad():
        full = model(tokens)
        cache = KVCache()
        chunks = [model(tokens[:, :5], cache, impl=impl), model(tokens[:, 5:8], cache, impl=impl)]
        chunks += [model(tokens[:, p : p + 1], cache, impl=impl) for p in range(8, 14)]  # one token at a time
    rtol, atol = tolerance(torch.float32)
    torch.testing.assert_close(torch.cat(chunks, dim=1), full, rtol=rtol, atol=10 * atol)
    assert cache.length == 14 and len(cache.keys) == len(cache.values) == model.cfg.n_layers
    assert cache.keys[0].shape == (2, model.cfg.kv_heads, 14, model.cfg.d_head)  # n_kv_heads heads are cached


def test_a_cache_shifts_the_positions_of_the_new_tokens():
    """The planted mistake: the last token run on its own (position 0) is not the cached step (position 13)."""
    model = _model("gqa")
    tokens = _tokens(model.cfg)
    with torch.no_grad():
        cache = KVCache()
        model(tokens[:, :13], cache)
        cached = model(tokens[:, 13:], cache)
        alone = model(tokens[:, 13:])
        full = model(tokens)[:, 13:]
    torch.testing.assert_close(cached, full, rtol=1e-5, atol=1e-5)
    assert (alone - full).abs().max() > 1e-3


def test_the_block_is_pre_norm_attention_then_swiglu_with_residuals():
    cfg = CONFIGS["gqa"]
    block = LlamaBlock(cfg, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        block.norm1.w.mul_(1.5), block.norm2.w.mul_(0.5)
    x = torch.randn(2, 7, 48, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        mid = x + block.attn(block.norm1(x))
        torch.testing.assert_close(block(x), mid + block.mlp(block.norm2(mid)), rtol=0, atol=0)
    assert isinstance(block.mlp, SwiGLU) and block.mlp.d_mlp == 100


@pytest.mark.parametrize("name", CONFIGS)
def test_notebook_08s_counter_equals_the_models_parameters(name):
    cfg = CONFIGS[name]
    with torch.device("meta"):
        model = Llama(cfg)
    counts = count_parameters(to_model_config(cfg))
    assert count_parameters(cfg) == counts  # a LlamaConfig is a ModelConfig the counter reads directly
    assert sum(p.numel() for p in model.parameters()) == counts["total"]
    category = {"W_E": "embedding", "W_U": "unembedding", "W_Q": "query", "W_K": "key", "W_V": "value",
                "W_O": "output", "W_in": "mlp_up", "W_gate": "mlp_gate", "W_out": "mlp_down", "w": "norms"}
    by_category = dict.fromkeys(counts, 0)
    for parameter_name, p in model.named_parameters():
        by_category[category[parameter_name.rsplit(".", 1)[-1]]] += p.numel()
    assert {k: v for k, v in by_category.items() if k != "total"} == {k: v for k, v in counts.items() if k != "total"}


def test_llama_3_8b_is_the_counters_preset_and_has_its_8_billion_parameters():
    cfg = LlamaConfig(d_vocab=128256, n_ctx=8192, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8,
                      d_mlp=swiglu_width(4096, multiple_of=1024, multiplier=1.3), rope_base=500000.0)
    assert to_model_config(cfg) == LLAMA3_8B
    with torch.device("meta"):
        model = Llama(cfg)
    assert sum(p.numel() for p in model.parameters()) == count_parameters(LLAMA3_8B)["total"] == 8_030_261_248


def test_swiglu_width_is_about_eight_thirds_of_d_model():
    assert swiglu_width(512) == 1408 and swiglu_width(768) == 2048 and swiglu_width(1) == 64
    assert swiglu_width(4096, multiple_of=256) == 11008  # Llama 2 7B
    for d_model in (64, 100, 512, 768, 1000):
        width = swiglu_width(d_model)
        assert width % 64 == 0 and 8 * d_model / 3 <= width + 1 < 8 * d_model / 3 + 64 + 1
        gelu_mlp = 2 * d_model * 4 * d_model  # the GELU MLP it replaces, at width 4 · d_model
        assert abs(3 * d_model * width - gelu_mlp) <= 3 * d_model * 64  # the same weights, up to the rounding


def test_the_swiglu_layer_draws_its_weights_from_a_generator():
    g = [torch.Generator().manual_seed(7) for _ in range(3)]
    first, again = SwiGLU(4, 8, generator=g[0]), SwiGLU(4, 8, generator=g[1])
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), again.parameters()))
    torch.manual_seed(7)  # without a generator: torch's global random state, drawn in the same order
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), SwiGLU(4, 8).parameters()))


def _cache(batch=1, pos=3):
    """A one-layer cache of ``pos`` positions for ``_cfg()`` (2 key/value heads of 8 features)."""
    return KVCache([torch.zeros(batch, 2, pos, 8)], [torch.zeros(batch, 2, pos, 8)])


def _cfg(**changes):
    return LlamaConfig(d_vocab=10, n_ctx=8, d_model=16, n_layers=1, n_heads=2).with_(**changes)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: _cfg(d_model=0), ValueError, "LlamaConfig.d_model must be a positive int"),
        (lambda: _cfg(n_heads=3), ValueError, "LlamaConfig.d_model=16 must be divisible by n_heads=3"),
        (lambda: _cfg(n_heads=4, n_kv_heads=3), ValueError, "n_heads=4 must be divisible by n_kv_heads=3"),
        (lambda: _cfg(d_model=12, n_heads=4), ValueError, r"\(d_head\) must be even"),
        (lambda: _cfg(rope_layout="pairs"), ValueError, "LlamaConfig.rope_layout must be one of"),
        (lambda: _cfg(rope_base=-1.0), ValueError, "LlamaConfig.rope_base must be a positive"),
        (lambda: _cfg(eps="tiny"), TypeError, "LlamaConfig.eps must be a number"),
        (lambda: _cfg(mlp="gelu"), ValueError, "LlamaConfig.mlp must be 'swiglu'"),
        (lambda: _cfg(tie_embeddings=True), ValueError, "LlamaConfig.tie_embeddings must be False"),
        (lambda: _cfg(n_experts=4, experts_per_token=2), ValueError, "LlamaConfig.n_experts must be 1"),
        (lambda: _cfg(n_layers=1.0), TypeError, "LlamaConfig.n_layers must be a positive int"),
        (lambda: Llama({"d_model": 16}), TypeError, "cfg must be a LlamaConfig"),
        (lambda: to_model_config(None), TypeError, "cfg must be a LlamaConfig"),
        (lambda: Llama(_cfg())(torch.tensor([[1, 10]])), ValueError, r"tokens must lie in \[0, d_vocab=10\)"),
        (lambda: Llama(_cfg())(torch.tensor([[1.0, 2.0]])), TypeError, "tokens must have an integer dtype"),
        (lambda: Llama(_cfg())(torch.tensor([1, 2])), ValueError, r"tokens must have shape \(batch, pos\)"),
        (lambda: Llama(_cfg())(torch.zeros(1, 9, dtype=torch.long)), ValueError, "exceed n_ctx=8"),
        (lambda: Llama(_cfg())(torch.zeros(1, 2, dtype=torch.long), cache=[]), TypeError, "cache must be a"),
        (lambda: Llama(_cfg())(torch.zeros(1, 2, dtype=torch.long), KVCache([torch.zeros(1, 2, 3, 8)] * 2, [])),
         ValueError, "cache must be empty or hold keys and values of all n_layers=1"),
        (lambda: Llama(_cfg())(torch.zeros(2, 2, dtype=torch.long), _cache()), ValueError,
         "cache holds a batch of 1, tokens 2"),
        (lambda: Llama(_cfg())(torch.zeros(1, 6, dtype=torch.long), _cache()), ValueError,
         "3 cached \\+ 6 new positions exceed n_ctx=8"),
        (lambda: swiglu_width(0), ValueError, "d_model must be a positive int"),
        (lambda: swiglu_width(64, multiple_of=2.0), TypeError, "multiple_of must be a positive int"),
        (lambda: swiglu_width(64, multiplier=0), ValueError, "multiplier must be a positive"),
        (lambda: SwiGLU(8, 0), ValueError, "d_mlp must be a positive int"),
        (lambda: SwiGLU(8, 16)(torch.ones(3, 7)), ValueError, "x must have last dimension d_model=8"),
    ],
)
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
