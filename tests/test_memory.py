"""Activation memory: Korthikanti et al. 2022's count against the bytes autograd really saves.

Oracle: a GPT-style block (LayerNorm, attention with softmax dropout, GELU MLP, dropout on both
residual branches; ``torch.native_dropout`` keeps a 1-byte mask, as the paper assumes) run in
bfloat16 under ``saved_tensors_hooks``; and the paper's own worked numbers.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from course_utils.counting.parameters import GPT2_SMALL, GPT3_175B, LLAMA3_8B, ModelConfig
from course_utils.counting.memory import activation_bytes_per_layer, saved_activation_bytes


class _Block(nn.Module):
    def __init__(self, h: int, a: int, d_mlp: int, p: float):
        super().__init__()
        self.a, self.p = a, p
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.up, self.down = nn.Linear(h, d_mlp), nn.Linear(d_mlp, h)

    def _drop(self, x):
        return torch.native_dropout(x, self.p, True)[0] if self.p else x

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, -1)
        q, k, v = (t.view(b, s, self.a, -1).transpose(1, 2) for t in (q, k, v))  # (b, a, s, d_head)
        pattern = self._drop((q @ k.transpose(-1, -2) / math.sqrt(h // self.a)).softmax(-1))
        x = x + self._drop(self.proj((pattern @ v).transpose(1, 2).reshape(b, s, h)))
        return x + self._drop(self.down(nn.functional.gelu(self.up(self.ln2(x)))))


def _layernorm_stats_bytes(x: torch.Tensor) -> int:
    """What a LayerNorm saves beyond its input (per-token mean and inverse deviation): measured."""
    ln = nn.LayerNorm(x.shape[-1]).to(x.dtype)
    return saved_activation_bytes(lambda: ln(x), ln) - x.numel() * x.element_size()


@pytest.mark.parametrize("dropout", [True, False])
@pytest.mark.parametrize("h, a, d_mlp, s, b", [(32, 4, 128, 16, 3), (48, 6, 80, 10, 2)])
def test_count_matches_the_bytes_autograd_saves(dropout, h, a, d_mlp, s, b):
    torch.manual_seed(0)
    block = _Block(h, a, d_mlp, 0.1 if dropout else 0.0).to(torch.bfloat16).train()
    x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
    measured = saved_activation_bytes(lambda: block(x), block)
    cfg = ModelConfig(d_vocab=10, n_ctx=s, d_model=h, n_layers=1, n_heads=a, d_mlp=d_mlp)
    counted = activation_bytes_per_layer(cfg, s, b, dropout=dropout)["total"]
    assert measured == counted + 2 * _layernorm_stats_bytes(x)


def test_the_papers_formula_sbh_34_plus_5as_over_h():
    # Korthikanti et al. eq. (1): sbh(34 + 5as/h); GPT-3 175B at s = 2048: 34 + 5*96*2048/12288 = 114
    got = activation_bytes_per_layer(GPT3_175B, 2048, 1)
    assert got["total"] == 2048 * 12288 * 114 == 2_868_903_936
    assert (got["attention"], got["mlp"], got["norms"]) == (
        11 * 2048 * 12288 + 5 * 96 * 2048**2, 19 * 2048 * 12288, 4 * 2048 * 12288)
    assert activation_bytes_per_layer(GPT2_SMALL, 1024)["total"] == 89_653_248


def test_recomputation_keeps_34sbh_or_only_the_layer_input():
    s, b, h = 2048, 4, 12288
    assert activation_bytes_per_layer(GPT3_175B, s, b, recompute="selective")["total"] == 34 * s * b * h
    assert activation_bytes_per_layer(GPT3_175B, s, b, recompute="full")["total"] == 2 * s * b * h
    no_dropout = activation_bytes_per_layer(GPT3_175B, s, b, dropout=False)["total"]
    assert no_dropout == 32 * s * b * h + 2 * 96 * s * s * b


def test_memory_grows_linearly_in_batch_and_has_a_square_term_in_length():
    one = activation_bytes_per_layer(GPT2_SMALL, 512, 1)["total"]
    assert activation_bytes_per_layer(GPT2_SMALL, 512, 3)["total"] == 3 * one
    doubled = activation_bytes_per_layer(GPT2_SMALL, 1024, 1)["total"]
    assert doubled > 2 * one


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="seq_len"):
        activation_bytes_per_layer(GPT2_SMALL, 0)
    with pytest.raises(ValueError, match="recompute"):
        activation_bytes_per_layer(GPT2_SMALL, 8, recompute="some")
    with pytest.raises(ValueError, match="cfg"):
        activation_bytes_per_layer(LLAMA3_8B, 8)
    with pytest.raises(TypeError, match="cfg"):
        activation_bytes_per_layer({"d_model": 8}, 8)
    with pytest.raises(TypeError, match="dropout"):
        activation_bytes_per_layer(GPT2_SMALL, 8, dropout=1)
    with pytest.raises(TypeError, match="module"):
        saved_activation_bytes(lambda: None, "block")


def test_training_bytes_worked_example_and_recomputation():
    """GPT-2 small, 8 sequences of 1,024, by hand: 124,439,808 parameters at 2 + 2 + 4 + 4 + 4 bytes, and
    12 layers of sbh(34 + 5as/h) bytes; selective recomputation keeps 34sbh, full only 2sbh."""
    from course_utils.counting.memory import training_bytes

    n, s, b, h, a = 124_439_808, 1024, 8, 768, 12
    parts = training_bytes(GPT2_SMALL, s, b)
    assert (parts["weights"], parts["gradients"], parts["master_weights"]) == (2 * n, 2 * n, 4 * n)
    assert parts["adam_m"] == parts["adam_v"] == 4 * n
    assert parts["activations"] == 12 * (34 * s * b * h + 5 * a * s * s * b) == 8_606_711_808
    assert parts["total"] == 16 * n + parts["activations"]
    assert training_bytes(GPT2_SMALL, s, b, "selective")["activations"] == 12 * 34 * s * b * h
    assert training_bytes(GPT2_SMALL, s, b, "full")["activations"] == 12 * 2 * s * b * h
    with pytest.raises(ValueError, match="recompute"):
        training_bytes(GPT2_SMALL, s, b, "some")
    with pytest.raises(ValueError, match="cfg"):
        training_bytes(LLAMA3_8B, s, b)
