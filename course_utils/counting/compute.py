"""Compute and memory arithmetic of a decoder-only model, from the same ``ModelConfig`` as the counts.

Covers the matrix-product FLOPs of a forward pass (``forward_flops``: 2 per multiply-add, so
``2 x tokens x weights`` plus the two attention products ``Q K^T`` and ``pattern V``), the rule of
thumb ``2N`` per token (``approximate_forward_flops``), training ``6ND`` (``training_flops``; the
backward pass costs twice the forward), a measurement with ``FlopCounterMode`` (``measure_flops``),
the memory of weights, gradients and Adam's two moments (``training_memory``) and the KV cache per
token (``kv_cache_bytes_per_token``). Mixture-of-experts models count the ``experts_per_token``
experts a token runs through: cost follows the active parameters, capacity the total.

Conventions: FLOPs count matrix products only (as ``FlopCounterMode`` does): no softmax, norms,
activations or bias additions; attention is counted as the dense square a plain implementation
computes (a causal mask makes half of it wasted work). The embedding lookup costs nothing; the
unembedding is a product even when tied.

Leaves out: activation memory (``counting.memory``), time to train (``counting.training_time``),
the decode step's bytes (``course_utils.counting.decoding``), optimizers other than Adam.
"""

from __future__ import annotations


import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from course_utils.counting.parameters import ModelConfig, active_parameters, count_parameters
from course_utils.validate import one_of, positive_int, positive_number

PRECISIONS = {  # bytes per parameter: weights, gradients, Adam moment m, Adam moment v, float32 master copy
    "float32": (4, 4, 4, 4, 0),
    "bfloat16": (2, 2, 2, 2, 0),
    "mixed": (2, 2, 4, 4, 4),  # bf16 weights and gradients, float32 moments and master weights
}
_MEMORY_PARTS = ("weights", "gradients", "adam_m", "adam_v", "master_weights")


def _check(cfg) -> ModelConfig:
    if not isinstance(cfg, ModelConfig):
        raise TypeError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
    return cfg


def matmul_parameters(cfg: ModelConfig) -> int:
    """Weights one token multiplies by (no biases, norms, positions or lookup; active experts only).

    ``matmul_parameters(GPT2_SMALL)`` -> 123,532,032 (the tied embedding counts once, as W_U).
    """
    counts = active_parameters(_check(cfg).with_(bias=False))
    lookup_only = 0 if cfg.tie_embeddings else counts["embedding"]  # a tied W_E is also the unembedding product
    return counts["total"] - counts["positions"] - counts["norms"] - lookup_only


def forward_flops(cfg: ModelConfig, seq_len: int, batch: int = 1) -> dict[str, int]:
    """Matrix-product FLOPs of one forward pass: ``{"weights", "attention", "total"}``.

    ``weights = 2 * batch * seq_len * matmul_parameters(cfg)``; ``attention = 4 * batch * n_layers *
    seq_len**2 * n_heads * d_head`` (scores and mixing). GPT-2 small, one sequence of 1,024:
    ``forward_flops(GPT2_SMALL, 1024)["total"]`` -> 291,648,307,200.
    """
    _check(cfg)
    positive_int("seq_len", seq_len)
    positive_int("batch", batch)
    weights = 2 * batch * seq_len * matmul_parameters(cfg)
    attention = 4 * batch * cfg.n_layers * seq_len**2 * cfg.n_heads * cfg.d_head
    return {"weights": weights, "attention": attention, "total": weights + attention}


def forward_flops_by_operation(cfg: ModelConfig, seq_len: int) -> dict[str, int]:
    """Forward FLOPs per token, operation by operation (Kaplan et al. 2020, Table 1, in this module's
    conventions): ``{"qkv", "scores", "reduce", "output", "mlp", "unembedding", "total"}``.

    Summed over the layers; attention as the dense square of ``seq_len`` keys; the MLP counts the
    ``experts_per_token`` experts a token runs through and the router. ``total`` equals
    ``forward_flops_per_token(cfg, seq_len)``. GPT-2 small at 1,024: ``qkv`` 2·12·768·2,304 = 42,467,328.
    """
    _check(cfg)
    positive_int("seq_len", seq_len)
    d, layers, d_kv = cfg.d_model, cfg.n_layers, cfg.kv_heads * cfg.d_head
    expert = (3 if cfg.gated else 2) * d * cfg.mlp_width
    router = d * cfg.n_experts if cfg.n_experts > 1 else 0
    flops = {
        "qkv": 2 * layers * d * (d + 2 * d_kv),
        "scores": 2 * layers * seq_len * cfg.n_heads * cfg.d_head,  # q · k for every key
        "reduce": 2 * layers * seq_len * cfg.n_heads * cfg.d_head,  # the pattern-weighted sum of the values
        "output": 2 * layers * cfg.n_heads * cfg.d_head * d,
        "mlp": 2 * layers * (cfg.experts_per_token * expert + router),
        "unembedding": 2 * d * cfg.d_vocab,
    }
    return {**flops, "total": sum(flops.values())}


def forward_flops_per_token(cfg: ModelConfig, seq_len: int) -> float:
    """``forward_flops(cfg, seq_len)["total"] / seq_len``:
    ``2 * matmul_parameters + 4 * n_layers * seq_len * d_model``."""
    return forward_flops(cfg, seq_len)["total"] / seq_len


def approximate_forward_flops(cfg: ModelConfig) -> int:
    """The rule of thumb ``2N`` per token, N the active non-embedding parameters (Kaplan et al. 2020)."""
    counts = active_parameters(_check(cfg))
    return 2 * (counts["total"] - counts["embedding"] - counts["positions"] - counts["unembedding"])


def training_flops(n_params: int | float, n_tokens: int | float) -> float:
    """``6 * N * D``: forward 2N and backward 4N per token. ``training_flops(175e9, 300e9)`` -> 3.15e23."""
    positive_number("n_params", n_params)
    positive_number("n_tokens", n_tokens)
    return 6 * n_params * n_tokens


def measure_flops(model: nn.Module, tokens: torch.Tensor, backward: bool = False) -> int:
    """FLOPs ``FlopCounterMode`` records for ``model(tokens)`` (and ``.sum().backward()`` if ``backward``)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    with torch.set_grad_enabled(backward), FlopCounterMode(display=False) as counter:
        out = model(tokens)
        out = getattr(out, "logits", out)
        if backward:
            out.sum().backward()
    return counter.get_total_flops()


def training_memory(n_params: int, precision: str = "float32") -> dict[str, int]:
    """Bytes for weights, gradients and Adam's moments: ``training_memory(10, "float32")["total"]`` -> 160.

    ``precision``: ``"float32"``, ``"bfloat16"`` (everything in bf16) or ``"mixed"`` (bf16 weights and
    gradients, float32 moments plus a float32 master copy). Activations are not included.
    """
    positive_int("n_params", n_params)
    one_of("precision", precision, tuple(PRECISIONS))
    parts = {name: n_params * size for name, size in zip(_MEMORY_PARTS, PRECISIONS[precision])}
    return {**parts, "total": sum(parts.values())}


def kv_cache_bytes_per_token(cfg: ModelConfig, bytes_per_value: int = 2) -> int:
    """Keys and values kept per token: ``2 * n_layers * n_kv_heads * d_head * bytes_per_value``.

    ``kv_cache_bytes_per_token(LLAMA3_8B)`` -> 131,072 (bf16); without GQA it would be 4x that.
    """
    positive_int("bytes_per_value", bytes_per_value)
    return 2 * _check(cfg).n_layers * cfg.kv_heads * cfg.d_head * bytes_per_value


def moe_capacity_and_cost(cfg: ModelConfig, seq_len: int) -> dict[str, float]:
    """Capacity (all parameters) vs cost (active parameters, FLOPs per token) of a model."""
    total, active = count_parameters(cfg)["total"], active_parameters(cfg)["total"]
    dense = cfg.with_(n_experts=1, experts_per_token=1)
    return {
        "total_parameters": total,
        "active_parameters": active,
        "active_fraction": active / total,
        "flops_per_token": forward_flops_per_token(cfg, seq_len),
        "flops_per_token_one_expert": forward_flops_per_token(dense, seq_len),
    }
