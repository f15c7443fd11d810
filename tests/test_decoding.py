"""A decode step's FLOPs and bytes: hand-computed for Llama 3 8B, and the FLOPs against FlopCounterMode."""

from __future__ import annotations

import pytest
import torch

from course_utils.counting import compute
from course_utils.counting.parameters import GPT2_SMALL, LLAMA3_8B, ModelConfig
from course_utils.counting.decoder import Decoder
from course_utils.counting.decoding import decode_step, decode_step_seconds
from course_utils.counting.hardware import H100_SXM

LLAMA_MATMUL = 8_030_261_248 - 525_336_576 - 266_240  # all but the embedding lookup and the norms' gains


def test_batch_one_reads_two_bytes_per_two_flops():
    step = decode_step(LLAMA3_8B, context=0)
    assert step["weight_bytes"] == 2 * LLAMA_MATMUL and step["weight_flops"] == 2 * LLAMA_MATMUL
    assert step["intensity"] == 1.0
    assert decode_step(LLAMA3_8B, context=0, bytes_per_value=1)["intensity"] == 2.0
    assert decode_step(LLAMA3_8B, context=0, batch=64)["intensity"] == 64.0


def test_kv_cache_bytes_and_attention_intensity_follow_the_kv_heads():
    step = decode_step(LLAMA3_8B, context=8192, batch=4)
    assert step["kv_bytes"] == 4 * 8192 * 2 * 32 * 8 * 128 * 2
    assert step["attention_flops"] == 4 * 4 * 32 * 8192 * 32 * 128
    assert step["attention_flops"] / step["kv_bytes"] == step["attention_intensity"] == 4.0
    no_gqa = decode_step(LLAMA3_8B.with_(n_kv_heads=None), context=8192, batch=4)
    assert no_gqa["kv_bytes"] == 4 * step["kv_bytes"] and no_gqa["attention_intensity"] == 1.0


def test_decode_flops_are_the_last_row_of_a_measured_forward_pass():
    # A forward pass over s + 1 tokens costs one more token's weight products than over s tokens,
    # and its dense attention square grows by 2s + 1 entries per layer: the new row (s + 1 keys, what a
    # cached step computes) and the new column of the s earlier rows (masked out, not computed by a step).
    cfg = ModelConfig(d_vocab=64, n_ctx=16, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, mlp="swiglu",
                      norm="rmsnorm", positions="rotary", bias=False, tie_embeddings=False)
    model, s = Decoder(cfg), 7
    longer = compute.measure_flops(model, torch.zeros(1, s + 1, dtype=torch.long))
    shorter = compute.measure_flops(model, torch.zeros(1, s, dtype=torch.long))
    masked_column = 4 * cfg.n_layers * cfg.d_model * s
    assert longer - shorter - masked_column == decode_step(cfg, context=s + 1)["flops"]


def test_roofline_time_is_memory_bound_at_small_batch():
    small = decode_step_seconds(decode_step(LLAMA3_8B, 1024, batch=1), H100_SXM)
    assert small["memory_bound"] and small["seconds"] == small["memory_s"]
    assert small["memory_s"] == pytest.approx(decode_step(LLAMA3_8B, 1024)["bytes"] / 3.35e12)
    large = decode_step_seconds(decode_step(LLAMA3_8B, 0, batch=1024), H100_SXM)
    assert not large["memory_bound"]


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="context"):
        decode_step(GPT2_SMALL, -1)
    with pytest.raises(ValueError, match="batch"):
        decode_step(GPT2_SMALL, 8, batch=0)
    with pytest.raises(TypeError, match="cfg"):
        decode_step("gpt2", 8)
    with pytest.raises(ValueError, match="step"):
        decode_step_seconds({"flops": 1}, H100_SXM)
    with pytest.raises(TypeError, match="accelerator"):
        decode_step_seconds(decode_step(GPT2_SMALL, 8), "H100")
