"""Notebook 12's own solutions (``LlamaBlock`` and ``Llama``, with the RMSNorm, RotaryAttention and SwiGLU
they are built from, read from the notebook's source by ``tools.mutation.sources.namespace``, no cell run)
against ``transformers``' ``LlamaDecoderLayer`` and ``LlamaForCausalLM`` built from a config (no download),
their random weights converted by ``llama.transformers_weights`` (per-head layout; ``W_Q``/``W_K`` permuted
for the interleaved layout): the same numbers to float32 tolerance, whole and, for the model, decoded in
pieces with a ``KVCache``; n_kv_heads < n_heads and both RoPE layouts. The notebook's parameter-count cell
claims ``count_parameters(cfg)`` equals ``sum(p.numel())`` of its model: tested here on the same shapes.
RoPE's base is transformers' default 10,000, the one the notebook's rotation uses."""

from __future__ import annotations

import pytest
import torch

from course_utils.counting import count_parameters
from course_utils.gpt.cache import KVCache
from course_utils.llama import config_from_transformers, load_llama, load_llama_block
from tools.mutation.sources import namespace
from llama_oracle import assert_close, hf_config, randomise

transformers = pytest.importorskip("transformers")
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding  # noqa: E402

SHAPES = {  # d_model, n_heads, n_kv_heads, n_layers, d_mlp
    "mha": (32, 4, 4, 1, 80),
    "gqa": (48, 6, 2, 2, 128),
    "mqa": (32, 4, 1, 2, 64),
}
LAYOUTS = ["halves", "interleaved"]


@pytest.fixture(scope="module")
def notebook():
    names = namespace("todays_block")
    needed = ("RMSNorm", "rotate_queries_keys", "SwiGLU", "LlamaBlock", "Llama")
    missing = [name for name in needed if name not in names]
    assert not missing, f"notebooks/src/12_todays_block.py does not define {missing} (sections 2-4 and 6 build on them)"
    return names


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_the_notebooks_block_equals_llama_decoder_layer(notebook, shape, layout):
    hc = hf_config(transformers, *SHAPES[shape])
    layer = randomise(LlamaDecoderLayer(hc, layer_idx=0))
    cfg = config_from_transformers(hc, layout)
    student = notebook["LlamaBlock"](cfg)
    student.load_state_dict(load_llama_block(layer, cfg).state_dict())  # strict: the course's names
    x = torch.randn(2, 9, hc.hidden_size, generator=torch.Generator().manual_seed(1))
    positions = torch.arange(9)[None].expand(2, -1)  # (batch, pos)
    future = torch.ones(9, 9, dtype=torch.bool).triu(1)
    additive_mask = torch.zeros(9, 9).masked_fill(future, float("-inf"))[None, None]  # (1, 1, q_pos, k_pos)
    with torch.no_grad():
        theirs = layer(x, attention_mask=additive_mask, position_ids=positions,
                       position_embeddings=LlamaRotaryEmbedding(hc)(x, positions))  # fmt: skip
        ours, k, v = student(x)
    assert_close(f"block {shape} {layout}", ours, theirs)
    assert tuple(k.shape) == tuple(v.shape) == (2, cfg.kv_heads, 9, cfg.d_head)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_the_notebooks_model_equals_llama_for_causal_lm_whole_and_cached(notebook, shape, layout):
    hf = randomise(transformers.LlamaForCausalLM(hf_config(transformers, *SHAPES[shape])), seed=2)
    course = load_llama(hf, layout)
    student = notebook["Llama"](course.cfg)
    student.load_state_dict(course.state_dict())
    tokens = torch.randint(0, 97, (2, 11), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        theirs = hf(tokens).logits
        whole, cache = student(tokens), KVCache()
        pieces = [student(tokens[:, :6], cache), student(tokens[:, 6:7], cache), student(tokens[:, 7:], cache)]
    assert_close(f"model {shape} {layout}", whole, theirs)
    assert_close(f"model {shape} {layout}, a prompt of 6, then 1, then 4", torch.cat(pieces, dim=1), theirs)
    assert cache.length == 11 and len(cache.keys) == len(cache.values) == course.cfg.n_layers
    assert tuple(cache.keys[0].shape) == (2, course.cfg.kv_heads, 11, course.cfg.d_head)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_counter_counts_the_notebooks_model(notebook, shape):
    cfg = config_from_transformers(hf_config(transformers, *SHAPES[shape]))
    student = notebook["Llama"](cfg)
    hf = transformers.LlamaForCausalLM(hf_config(transformers, *SHAPES[shape]))
    built = sum(p.numel() for p in student.parameters())
    assert built == count_parameters(cfg)["total"] == sum(p.numel() for p in hf.parameters())
