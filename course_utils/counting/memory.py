"""Activation memory of training: what the forward pass keeps for the backward pass, per layer.

Covers the count of Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
Models", section 4.1) for a GPT-style block (LayerNorm, multi-head attention with a softmax and
dropout, a plain GELU/ReLU MLP, dropout on both residual branches), in 16-bit activations and 1-byte
dropout masks, without tensor or sequence parallelism:

    attention 11sbh + 5as²b, MLP 19sbh, two LayerNorms 4sbh  ->  sbh (34 + 5as/h) bytes per layer

(s positions, b sequences, h = ``d_model``, a = ``n_heads``). ``activation_bytes_per_layer`` gives
it as a breakdown, for any ``d_mlp`` (the MLP term is ``3sbh + 4sb·d_mlp``, 19sbh at ``d_mlp = 4h``),
without dropout (Llama-style training: 32sbh + 2as²b) and under recomputation: ``"selective"``
drops the ``as²b`` terms (the attention scores, recomputed in the backward pass), ``"full"`` keeps
only each layer's input (2sbh) and recomputes the whole layer. ``saved_activation_bytes`` measures
the same thing on a real module: the bytes of every tensor autograd saves, parameters excluded.

``training_bytes`` adds it up for a whole training step in mixed precision: bf16 weights and
gradients, a float32 master copy and Adam's two float32 moments (16 bytes a parameter,
``compute.training_memory``), plus every layer's activations.

``activation_bytes_per_layer(GPT2_SMALL, 1024)["total"]`` -> 1024·768·(34 + 5·12·1024/768) =
89,653,248 bytes.

Leaves out: the LayerNorms' per-token mean and inverse deviation (8 bytes a token each, in float32),
the embedding and the logits (outside the layers), parallelism (which divides the terms), gated
MLPs, grouped-query attention and mixtures of experts.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from course_utils.counting.compute import training_memory
from course_utils.counting.parameters import ModelConfig, count_parameters
from course_utils.validate import one_of, positive_int

RECOMPUTE = ("none", "selective", "full")


def activation_bytes_per_layer(
    cfg: ModelConfig, seq_len: int, batch: int = 1, *, dropout: bool = True, recompute: str = "none"
) -> dict[str, int]:
    """Bytes one layer keeps for backward: ``{"attention", "mlp", "norms", "total"}`` (16-bit values).

    Attention: the QKV input 2sbh, Q and K for the scores 4sbh, the softmax output 2as²b, its dropout
    mask as²b and output 2as²b (the input of the product with V), V 2sbh, the output projection's
    input 2sbh and its dropout mask sbh. MLP: its input 2sbh, the activation's input and output
    2sb·d_mlp each, the dropout mask sbh. Norms: each LayerNorm's input 2sbh.
    """
    if not isinstance(cfg, ModelConfig):
        raise TypeError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
    if cfg.gated or cfg.n_experts > 1 or cfg.kv_heads != cfg.n_heads or cfg.norm != "layernorm":
        raise ValueError("cfg must be a GPT-style block (plain MLP, LayerNorm, no GQA, no experts): "
                         "the count of Korthikanti et al. covers that block")
    s, b = positive_int("seq_len", seq_len), positive_int("batch", batch)
    one_of("recompute", recompute, RECOMPUTE)
    if not isinstance(dropout, bool):
        raise TypeError(f"dropout must be a bool, got {dropout!r}")
    h, a, drop = cfg.d_model, cfg.n_heads, int(dropout)
    if recompute == "full":  # only the layer's input is kept; everything else is recomputed
        return {"attention": 0, "mlp": 0, "norms": 0, "layer_input": 2 * s * b * h, "total": 2 * s * b * h}
    scores = 0 if recompute == "selective" else (2 + 3 * drop) * a * s * s * b
    attention = (10 + drop) * s * b * h + scores
    mlp = (2 + drop) * s * b * h + 4 * s * b * cfg.mlp_width
    norms = 4 * s * b * h
    return {"attention": attention, "mlp": mlp, "norms": norms, "layer_input": 0, "total": attention + mlp + norms}


def training_bytes(cfg: ModelConfig, seq_len: int, batch: int = 1, recompute: str = "none") -> dict[str, int]:
    """Bytes of a mixed-precision Adam training step: ``{"weights", "gradients", "adam_m", "adam_v",
    "master_weights", "activations", "total"}``; activations for all ``n_layers`` (with dropout).

    GPT-2 small, 8 sequences of 1,024: 16 · 124,439,808 bytes of parameter state, plus 12 layers of
    1024 · 8 · 768 · (34 + 5 · 12 · 1024 / 768) bytes.
    """
    per_layer = activation_bytes_per_layer(cfg, seq_len, batch, recompute=recompute)["total"]  # checks cfg, sizes
    state = training_memory(count_parameters(cfg)["total"], "mixed")
    parts = {key: value for key, value in state.items() if key != "total"}
    parts["activations"] = cfg.n_layers * per_layer
    return {**parts, "total": sum(parts.values())}


def saved_activation_bytes(run: Callable[[], torch.Tensor], module: nn.Module) -> int:
    """Bytes of the distinct tensors autograd saves while ``run()`` builds its graph, parameters excluded.

    Tensors that share storage (views, the same tensor saved twice) count once, by their storage.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    parameters = {p.untyped_storage().data_ptr() for p in module.parameters()}
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in parameters:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    del out
    return sum(kept.values())
