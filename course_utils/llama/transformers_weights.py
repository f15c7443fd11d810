"""``transformers``' Llama in the course's layout: its config as a ``LlamaConfig``, its weights copied in.

Covers ``config_from_transformers`` (a ``transformers.LlamaConfig`` -> ``LlamaConfig``, refusing
what the course's model does not have: biases, tied embeddings, head sizes other than d_model /
n_heads, RoPE scaling, an activation other than SiLU), ``load_llama_block`` (a ``LlamaDecoderLayer``
-> ``LlamaBlock``) and ``load_llama`` (a ``LlamaForCausalLM`` -> ``Llama``). transformers keeps
``nn.Linear`` weights as (out, in) with the heads stacked along ``out``; the course keeps per-head
(head, d_model, d_head) and ``x @ W``. Its checkpoints pair RoPE's features as rotate-half; with
``rope_layout="interleaved"`` ``W_Q`` and ``W_K`` are permuted per head (``to_interleaved_layout``)
and the model computes the same numbers (tested).
Used by the tests as the oracle's bridge; downloads nothing (build the transformers model from a config).
Leaves out the way back (course -> transformers) and Meta's own checkpoint files.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from course_utils.llama.config import LlamaConfig
from course_utils.llama.model import Llama, LlamaBlock
from course_utils.llama.rotary import to_interleaved_layout
from course_utils.positions import LAYOUTS
from course_utils.validate import one_of


def config_from_transformers(hf_config, rope_layout: str = "halves") -> LlamaConfig:
    """``LlamaConfig`` of the same shape: ``hidden_size`` -> ``d_model``, ``intermediate_size`` -> ``d_mlp``, ..."""
    one_of("rope_layout", rope_layout, LAYOUTS)
    if not hasattr(hf_config, "num_key_value_heads") or not hasattr(hf_config, "rms_norm_eps"):
        raise TypeError(f"hf_config must be a transformers LlamaConfig, got {type(hf_config).__name__}")
    d_model, n_heads = hf_config.hidden_size, hf_config.num_attention_heads
    rope = dict(getattr(hf_config, "rope_parameters", None) or {})
    unsupported = {
        "attention_bias": bool(getattr(hf_config, "attention_bias", False)),
        "mlp_bias": bool(getattr(hf_config, "mlp_bias", False)),
        "tie_word_embeddings": bool(getattr(hf_config, "tie_word_embeddings", False)),
        f"head_dim != hidden_size // num_attention_heads = {d_model // n_heads}":
            getattr(hf_config, "head_dim", None) not in (None, d_model // n_heads),
        f"rope_type {rope.get('rope_type')!r} (only 'default')": rope.get("rope_type", "default") != "default",
        f"hidden_act {hf_config.hidden_act!r} (only 'silu')": hf_config.hidden_act != "silu",
    }  # fmt: skip
    refused = [name for name, present in unsupported.items() if present]
    rope_base = float(rope.get("rope_theta", getattr(hf_config, "rope_theta", 10_000.0)))  # rope_theta before v5
    if refused:
        raise ValueError(f"hf_config has what the course's Llama leaves out: {', '.join(refused)}")
    return LlamaConfig(
        d_vocab=hf_config.vocab_size, n_ctx=hf_config.max_position_embeddings, d_model=d_model,
        n_layers=hf_config.num_hidden_layers, n_heads=n_heads, n_kv_heads=hf_config.num_key_value_heads,
        d_mlp=hf_config.intermediate_size, rope_base=rope_base,
        rope_layout=rope_layout, eps=float(hf_config.rms_norm_eps),
    )  # fmt: skip


def _per_head(weight: Tensor, n_heads: int) -> Tensor:
    """(n_heads·d_head, d_model), transformers' stacked rows -> (n_heads, d_model, d_head)."""
    return weight.reshape(n_heads, -1, weight.shape[1]).transpose(1, 2)


def _copy_block(block: LlamaBlock, layer: nn.Module, layout: str) -> None:
    attn, mlp = layer.self_attn, layer.mlp
    rotated = to_interleaved_layout if layout == "interleaved" else (lambda W: W)
    with torch.no_grad():
        block.norm1.w.copy_(layer.input_layernorm.weight)
        block.norm2.w.copy_(layer.post_attention_layernorm.weight)
        block.attn.W_Q.copy_(rotated(_per_head(attn.q_proj.weight, block.attn.n_heads)))
        block.attn.W_K.copy_(rotated(_per_head(attn.k_proj.weight, block.attn.n_kv_heads)))
        block.attn.W_V.copy_(_per_head(attn.v_proj.weight, block.attn.n_kv_heads))
        block.attn.W_O.copy_(attn.o_proj.weight.T.reshape(block.attn.n_heads, block.attn.d_head, -1))
        block.mlp.W_gate.copy_(mlp.gate_proj.weight.T)  # (d_model, d_mlp)
        block.mlp.W_in.copy_(mlp.up_proj.weight.T)
        block.mlp.W_out.copy_(mlp.down_proj.weight.T)  # (d_mlp, d_model)


def _like(module: nn.Module, reference: Tensor) -> nn.Module:
    return module.to(device=reference.device, dtype=reference.dtype)


def load_llama_block(layer, cfg: LlamaConfig) -> LlamaBlock:
    """A ``LlamaBlock`` holding a ``transformers`` ``LlamaDecoderLayer``'s weights.

    ``cfg`` gives the shape and the RoPE layout (``config_from_transformers(layer's config, layout)``).
    """
    if not all(hasattr(layer, name) for name in ("self_attn", "mlp", "input_layernorm", "post_attention_layernorm")):
        raise TypeError(f"layer must be a transformers LlamaDecoderLayer, got {type(layer).__name__}")
    if not isinstance(cfg, LlamaConfig):
        raise TypeError(f"cfg must be a LlamaConfig, got {type(cfg).__name__}")
    weight = layer.self_attn.q_proj.weight
    if tuple(weight.shape) != (cfg.d_model, cfg.d_model):
        raise ValueError(f"layer's q_proj is {tuple(weight.shape)}, cfg says d_model={cfg.d_model}")
    block = _like(LlamaBlock(cfg), weight)
    _copy_block(block, layer, cfg.rope_layout)
    return block


def load_llama(hf_model, rope_layout: str = "halves") -> Llama:
    """A course ``Llama`` holding a ``transformers`` ``LlamaForCausalLM``'s weights, in ``rope_layout``."""
    if not hasattr(hf_model, "lm_head") or not hasattr(getattr(hf_model, "model", None), "layers"):
        raise TypeError(f"hf_model must be a transformers LlamaForCausalLM, got {type(hf_model).__name__}")
    cfg = config_from_transformers(hf_model.config, rope_layout)
    weight = hf_model.lm_head.weight
    model = _like(Llama(cfg), weight)
    with torch.no_grad():
        model.W_E.copy_(hf_model.model.embed_tokens.weight)  # (d_vocab, d_model) both
        model.W_U.copy_(weight.T)  # (d_model, d_vocab)
        model.norm_final.w.copy_(hf_model.model.norm.weight)
    for block, layer in zip(model.blocks, hf_model.model.layers):
        _copy_block(block, layer, rope_layout)
    return model
