"""Checks for notebook 08 (parameter counting and compute): one layer's attention parameters (biases,
grouped-query attention), one MLP's parameters (plain or gated), a whole model from a ``ModelConfig``
and a training-FLOP estimate. Answers are whole numbers (FLOPs: at float32 precision); references
come from ``course_utils.counting`` and ``course_utils.compute``, themselves checked against real
modules."""

from __future__ import annotations

import math

import torch
from torch import nn

from course_utils import compute, counting
from course_utils.checks.core import Alternative, Case, Exercise, Mistake
from course_utils.counting import ModelConfig
from course_utils.decoder import Decoder


def _layer_config(
    d_model: int,
    n_heads: int,
    n_kv_heads: int | None = None,
    d_mlp: int | None = None,
    mlp: str = "gelu",
    bias: bool = True,
) -> ModelConfig:
    return ModelConfig(1, 1, d_model, 1, n_heads, n_kv_heads=n_kv_heads, d_mlp=d_mlp, mlp=mlp, bias=bias)


def _meta_numel(*linears: tuple[int, int, bool]) -> int:
    with torch.device("meta"):
        return sum(
            p.numel() for fan_in, fan_out, bias in linears for p in nn.Linear(fan_in, fan_out, bias=bias).parameters()
        )


# -- attention of one layer ----------------------------------------------------------------------------
def attention_parameter_count(d_model: int, n_heads: int, n_kv_heads: int, bias: bool) -> int:
    """Reference: W_Q, W_K, W_V, W_O of one layer (K and V have n_kv_heads heads), with their biases."""
    return sum(counting.attention_parameters(_layer_config(d_model, n_heads, n_kv_heads, bias=bias)).values())


def _attention_cases(seed: int) -> list[Case]:
    shapes = [(768, 12, 12, True), (4096, 32, 8, False), (512, 8, 2, True), (96, 6, 1, True)]
    if seed:
        shapes = [(64 * seed, 4, 2, True), (48 * seed, 6, 3, False), (40 * seed, 8, 8, True), (72, 12, 4, True)]
    return [Case(f"d_model={d}, {h} heads, {kv} KV heads, bias={b}", (d, h, kv, b)) for d, h, kv, b in shapes]


def _attn_no_gqa(d_model, n_heads, n_kv_heads, bias):
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def _attn_no_bias(d_model, n_heads, n_kv_heads, bias):
    d_kv = d_model // n_heads * n_kv_heads
    return 2 * d_model * d_model + 2 * d_model * d_kv


def _attn_all_shrink(d_model, n_heads, n_kv_heads, bias):
    d_kv = d_model // n_heads * n_kv_heads
    return 4 * d_model * d_kv + (4 * d_kv if bias else 0)


def _attn_full_width_biases(d_model, n_heads, n_kv_heads, bias):
    d_kv = d_model // n_heads * n_kv_heads
    return 2 * d_model * d_model + 2 * d_model * d_kv + (4 * d_model if bias else 0)


def _attn_per_head(d_model, n_heads, n_kv_heads, bias):
    d_head, total = d_model // n_heads, 0
    for _ in range(n_heads):  # every query head: its W_Q slice and its share of W_O
        total += 2 * d_model * d_head + (d_head if bias else 0)
    for _ in range(n_kv_heads):  # every key/value head: its W_K and W_V slices
        total += 2 * d_model * d_head + (2 * d_head if bias else 0)
    return total + (d_model if bias else 0)


def _attn_meta_linears(d_model, n_heads, n_kv_heads, bias):
    d_kv = d_model // n_heads * n_kv_heads
    return _meta_numel((d_model, d_model, bias), (d_model, d_kv, bias), (d_model, d_kv, bias), (d_model, d_model, bias))


def _attn_ratio(d_model, n_heads, n_kv_heads, bias):
    kv_share = n_kv_heads / n_heads
    return round((2 + 2 * kv_share) * d_model * (d_model + int(bias)))


ATTENTION = Exercise(
    name="attention_parameter_count",
    reference=attention_parameter_count,
    cases=_attention_cases,
    tolerance="exact",
    mistakes=[
        Mistake(
            "no GQA",
            _attn_no_gqa,
            "with fewer KV heads, W_K and W_V only produce n_kv_heads * d_head outputs: they shrink",
        ),
        Mistake(
            "no biases", _attn_no_bias, "bias=True: each of the four projections has one bias per output it produces"
        ),
        Mistake(
            "all four shrink",
            _attn_all_shrink,
            "only keys and values are shared between query heads; W_Q and W_O stay d_model x d_model",
        ),
        Mistake(
            "full-width biases",
            _attn_full_width_biases,
            "a bias is as long as its layer's output: the K and V biases have n_kv_heads * d_head entries",
        ),
    ],
    alternatives=[
        Alternative("head by head", _attn_per_head),
        Alternative("nn.Linear on meta", _attn_meta_linears),
        Alternative("share of KV heads", _attn_ratio),
    ],
    hints=[
        "Count the four projections one at a time: how many inputs and how many outputs does each have?",
        "Queries and the output projection are d_model wide on both sides; keys and values have n_kv_heads "
        "heads of d_head = d_model / n_heads; a bias adds one number per output.",
    ],
)


def check_attention_parameter_count(fn):
    """Check a student's ``attention_parameter_count``."""
    return ATTENTION.check(fn)


# -- one MLP ---------------------------------------------------------------------------------------------
def mlp_parameter_count(d_model: int, d_mlp: int, gated: bool, bias: bool) -> int:
    """Reference: one MLP (up, down and, when gated, the gate projection) with biases."""
    return sum(
        counting.mlp_parameters(
            _layer_config(d_model, 1, d_mlp=d_mlp, mlp="swiglu" if gated else "gelu", bias=bias)
        ).values()
    )


def _mlp_cases(seed: int) -> list[Case]:
    shapes = [(768, 3072, False, True), (4096, 14336, True, False), (512, 1365, True, True), (64, 100, False, False)]
    if seed:
        shapes = [
            (32 * seed, 80, True, True),
            (24, 96 * seed, False, True),
            (48, 128, True, False),
            (40 * seed, 56, False, True),
        ]
    return [Case(f"d_model={d}, d_mlp={m}, gated={g}, bias={b}", (d, m, g, b)) for d, m, g, b in shapes]


def _mlp_no_gate(d_model, d_mlp, gated, bias):
    return 2 * d_model * d_mlp + ((d_mlp + d_model) if bias else 0)


def _mlp_biases_both_wide(d_model, d_mlp, gated, bias):
    return (3 if gated else 2) * d_model * d_mlp + ((3 if gated else 2) * d_mlp if bias else 0)


def _mlp_assumes_four(d_model, d_mlp, gated, bias):
    return mlp_parameter_count(d_model, 4 * d_model, gated, bias)


def _mlp_matrices_then_biases(d_model, d_mlp, gated, bias):
    matrices = 3 if gated else 2
    biases = (matrices - 1) * d_mlp + d_model
    return matrices * d_model * d_mlp + bias * biases


def _mlp_meta_linears(d_model, d_mlp, gated, bias):
    layers = [(d_model, d_mlp, bias), (d_mlp, d_model, bias)] + ([(d_model, d_mlp, bias)] if gated else [])
    return _meta_numel(*layers)


def _mlp_as_float(d_model, d_mlp, gated, bias):
    per_hidden_unit = (3.0 if gated else 2.0) * d_model + (2.0 if gated else 1.0) * bias
    return per_hidden_unit * d_mlp + float(bias) * d_model


MLP = Exercise(
    name="mlp_parameter_count",
    reference=mlp_parameter_count,
    cases=_mlp_cases,
    tolerance="exact",
    mistakes=[
        Mistake(
            "gate forgotten",
            _mlp_no_gate,
            "a gated MLP (SwiGLU) has a third matrix, the gate, the same shape as the up-projection",
        ),
        Mistake(
            "down bias d_mlp wide",
            _mlp_biases_both_wide,
            "the down-projection's bias has d_model entries (one per output), not d_mlp",
        ),
        Mistake(
            "d_mlp = 4 d_model", _mlp_assumes_four, "use the d_mlp you are given: gated models rarely use 4 * d_model"
        ),
    ],
    alternatives=[
        Alternative("matrices then biases", _mlp_matrices_then_biases),
        Alternative("nn.Linear on meta", _mlp_meta_linears),
        Alternative("per hidden unit, as float", _mlp_as_float),
    ],
    hints=[
        "List the matrices: how many are there in a plain MLP, and how many in a gated one?",
        "Up and gate map d_model to d_mlp, down maps d_mlp back to d_model; "
        "each bias is as long as its layer's output.",
    ],
)


def check_mlp_parameter_count(fn):
    """Check a student's ``mlp_parameter_count``."""
    return MLP.check(fn)


# -- the whole model ---------------------------------------------------------------------------------------
def model_parameter_count(cfg: ModelConfig) -> int:
    """Reference: every parameter of the model ``cfg`` describes (all experts, each tied matrix once)."""
    return counting.count_parameters(cfg)["total"]


def _model_cases(seed: int) -> list[Case]:
    base = ModelConfig(d_vocab=1000 + 7 * seed, n_ctx=64, d_model=48, n_layers=3 + seed, n_heads=6)
    configs = [
        base,
        base.with_(
            tie_embeddings=False, positions="rotary", norm="rmsnorm", bias=False, mlp="swiglu", n_kv_heads=2, d_mlp=128
        ),
        base.with_(
            n_experts=4,
            experts_per_token=2,
            mlp="swiglu",
            norm="rmsnorm",
            positions="rotary",
            bias=False,
            tie_embeddings=False,
        ),
        base.with_(bias=False),
    ]
    labels = ["GPT-2 style, tied", "GQA, SwiGLU, RMSNorm, rotary, untied, no biases", "4 experts, top-2", "no biases"]
    return [
        Case(f"{label} ({cfg.n_layers} layers, d_vocab={cfg.d_vocab})", (cfg,)) for label, cfg in zip(labels, configs)
    ]


def _model_untied_twice(cfg):
    return counting.count_parameters(cfg)["total"] + (cfg.d_vocab * cfg.d_model if cfg.tie_embeddings else 0)


def _model_no_final_norm(cfg):
    return counting.count_parameters(cfg)["total"] - counting.norm_parameters(cfg)


def _model_active_only(cfg):
    return counting.active_parameters(cfg)["total"]


def _model_experts_everywhere(cfg):
    counts = counting.count_parameters(cfg)
    return counts["total"] + (cfg.n_experts - 1) * cfg.n_layers * sum(counting.attention_parameters(cfg).values())


def _model_meta_decoder(cfg):
    with torch.device("meta"):
        return sum(p.numel() for p in Decoder(cfg).parameters())


def _model_layer_loop(cfg):
    per_layer = sum(counting.attention_parameters(cfg).values()) + cfg.n_experts * sum(
        counting.mlp_parameters(cfg).values()
    )
    per_layer += 2 * counting.norm_parameters(cfg) + (cfg.d_model * cfg.n_experts if cfg.n_experts > 1 else 0)
    total = sum(per_layer for _ in range(cfg.n_layers)) + counting.norm_parameters(cfg)
    total += cfg.d_vocab * cfg.d_model * (1 if cfg.tie_embeddings else 2)
    return total + (cfg.n_ctx * cfg.d_model if cfg.positions == "learned" else 0)


def _model_by_groups(cfg):
    return sum(counting.group_counts(counting.count_parameters(cfg)).values())


MODEL = Exercise(
    name="model_parameter_count",
    reference=model_parameter_count,
    cases=_model_cases,
    tolerance="exact",
    mistakes=[
        Mistake(
            "tied counted twice", _model_untied_twice, "with tied embeddings W_U is W_E: the shared matrix counts once"
        ),
        Mistake(
            "no final norm", _model_no_final_norm, "there is one more norm after the last block, before the unembedding"
        ),
        Mistake(
            "active only",
            _model_active_only,
            "count every expert: the model holds all of them even if a token uses only k",
        ),
        Mistake(
            "experts everywhere",
            _model_experts_everywhere,
            "only the MLP is replicated per expert; attention is shared",
        ),
    ],
    alternatives=[
        Alternative("sum(numel) on meta", _model_meta_decoder),
        Alternative("layer by layer", _model_layer_loop),
        Alternative("coarse groups", _model_by_groups),
    ],
    hints=[
        "Split the model into embedding, positions, the blocks, a final norm and the unembedding, and count each.",
        "A block is attention, two norms and the MLP (times n_experts, plus a router, for a mixture of experts); "
        "rotary positions and tied unembeddings add nothing.",
    ],
)


def check_model_parameter_count(fn):
    """Check a student's ``model_parameter_count``."""
    return MODEL.check(fn)


# -- training FLOPs ------------------------------------------------------------------------------------------
def training_flops_estimate(cfg: ModelConfig, n_tokens: int) -> float:
    """Reference: ``6 N D`` with N the active non-embedding parameters (what a token runs through)."""
    return compute.training_flops(compute.approximate_forward_flops(cfg) / 2, n_tokens)


def _flops_cases(seed: int) -> list[Case]:
    dense = ModelConfig(
        d_vocab=50257, n_ctx=1024, d_model=768 + 96 * seed, n_layers=12, n_heads=12, tie_embeddings=False
    )
    moe = counting.MIXTRAL_8X7B.with_(n_layers=32 - seed)
    return [
        Case("a GPT-2-small-like model, 1e9 tokens", (dense, 10**9)),
        Case("Mixtral-like, 1e12 tokens", (moe, 10**12)),
        Case("GPT-3 175B, 3e11 tokens", (counting.GPT3_175B, 300 * 10**9)),
    ]


def _flops_forward_only(cfg, n_tokens):
    return compute.approximate_forward_flops(cfg) * n_tokens


def _flops_all_experts(cfg, n_tokens):
    counts = counting.count_parameters(cfg)
    return 6 * (counts["total"] - counts["embedding"] - counts["positions"] - counts["unembedding"]) * n_tokens


def _flops_with_embeddings(cfg, n_tokens):
    return 6 * counting.active_parameters(cfg)["total"] * n_tokens


def _flops_three_passes(cfg, n_tokens):
    forward = compute.approximate_forward_flops(cfg) * n_tokens
    return forward + 2 * forward  # backward: gradients for activations and for weights, one forward's worth each


def _flops_from_groups(cfg, n_tokens):
    groups = counting.group_counts(counting.active_parameters(cfg))
    n = groups["attention"] + groups["mlp"] + groups["norms"]
    return 6.0 * n * n_tokens


def _flops_log_space(cfg, n_tokens):
    n = compute.approximate_forward_flops(cfg) / 2
    return math.exp(math.log(6) + math.log(n) + math.log(n_tokens))


FLOPS = Exercise(
    name="training_flops_estimate",
    reference=training_flops_estimate,
    cases=_flops_cases,
    tolerance="float32",
    mistakes=[
        Mistake(
            "forward only",
            _flops_forward_only,
            "training also runs the backward pass, which costs about twice the forward: 6, not 2",
        ),
        Mistake(
            "all experts",
            _flops_all_experts,
            "a token only runs through experts_per_token experts: use the active parameters",
        ),
        Mistake(
            "embeddings included",
            _flops_with_embeddings,
            "leave out the embedding, position and unembedding matrices, as the 6ND rule does",
        ),
    ],
    alternatives=[
        Alternative("forward plus backward", _flops_three_passes),
        Alternative("coarse groups", _flops_from_groups),
        Alternative("in log space", _flops_log_space),
    ],
    hints=[
        "Per token and per parameter: how many FLOPs does the forward pass take, and how many the backward?",
        "Forward is 2 per parameter, backward twice that; "
        "N is what one token runs through, without the embedding matrices.",
    ],
)


def check_training_flops_estimate(fn):
    """Check a student's ``training_flops_estimate``."""
    return FLOPS.check(fn)


EXERCISES = {ex.name: ex for ex in (ATTENTION, MLP, MODEL, FLOPS)}
