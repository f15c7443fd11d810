"""Helpers the one-layer exercises of notebook 08 share: a one-layer ``ModelConfig``, and a count of
``nn.Linear`` parameters taken on the meta device (no memory)."""

from __future__ import annotations

import torch
from torch import nn

from course_utils.counting.parameters import ModelConfig


def layer_config(
    d_model: int,
    n_heads: int,
    n_kv_heads: int | None = None,
    d_mlp: int | None = None,
    mlp: str = "gelu",
    bias: bool = True,
) -> ModelConfig:
    """A one-layer, one-token-vocabulary config, enough for ``counting``'s per-layer counts."""
    return ModelConfig(1, 1, d_model, 1, n_heads, n_kv_heads=n_kv_heads, d_mlp=d_mlp, mlp=mlp, bias=bias)


def meta_numel(*linears: tuple[int, int, bool]) -> int:
    """Parameters of ``nn.Linear(fan_in, fan_out, bias)`` layers: ``meta_numel((4, 8, True))`` -> 40."""
    with torch.device("meta"):
        return sum(
            p.numel() for fan_in, fan_out, bias in linears for p in nn.Linear(fan_in, fan_out, bias=bias).parameters()
        )
