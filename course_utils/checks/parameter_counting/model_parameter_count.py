"""Exercise ``model_parameter_count(cfg)``: every parameter of the model a ``ModelConfig`` describes.

Required form (stated in the notebook): a whole number counting all experts of a mixture of experts
and each tied matrix once (rotary positions and a tied unembedding add nothing).
"""

from __future__ import annotations

import random
import torch

from course_utils.counting import parameters as counting
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.counting.parameters import ModelConfig
from course_utils.counting.decoder import Decoder


def model_parameter_count(cfg: ModelConfig) -> int:
    """Reference: every parameter of the model ``cfg`` describes (all experts, each tied matrix once)."""
    return counting.count_parameters(cfg)["total"]


def _model_cases(seed: int) -> list[Case]:
    """Four configs that between them take every branch a count has: each norm (LayerNorm with and without
    its bias, RMSNorm with bias=True, none), each kind of positions, plain and gated MLPs (SwiGLU and GeGLU),
    GQA with and without biases, a mixture of plain-MLP experts with biases, tied and untied embeddings."""
    d_vocab, n_layers = 1000 + 7 * seed, 3 + seed
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        d_vocab, n_layers = rng.randint(500, 60_000), rng.randint(1, 12)
    base = ModelConfig(d_vocab=d_vocab, n_ctx=64, d_model=48, n_layers=n_layers, n_heads=6)
    configs = {
        "GPT-2 style, tied": base,
        "GQA, SwiGLU, LayerNorm, rotary, untied, no biases": base.with_(
            tie_embeddings=False, positions="rotary", bias=False, mlp="swiglu", n_kv_heads=2, d_mlp=128
        ),
        "2 experts (plain GELU MLPs), top-1, with biases, no norms, no positions, untied": base.with_(
            n_experts=2, experts_per_token=1, norm="none", positions="none", tie_embeddings=False
        ),
        "GQA, GeGLU, RMSNorm, sinusoidal positions, with biases, tied": base.with_(
            n_kv_heads=2, mlp="geglu", d_mlp=80, norm="rmsnorm", positions="sinusoidal"
        ),
    }
    return [Case(f"{label} ({cfg.n_layers} layers, d_vocab={cfg.d_vocab})", (cfg,)) for label, cfg in configs.items()]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("tied counted twice", "with tied embeddings W_U is W_E: the shared matrix counts once")
def _model_untied_twice(cfg):
    return counting.count_parameters(cfg)["total"] + (cfg.d_vocab * cfg.d_model if cfg.tie_embeddings else 0)


@bank.mistake("no final norm", "there is one more norm after the last block, before the unembedding")
def _model_no_final_norm(cfg):
    return counting.count_parameters(cfg)["total"] - counting.norm_parameters(cfg)


@bank.mistake("active only", "count every expert: the model holds all of them even if a token uses only k")
def _model_active_only(cfg):
    return counting.active_parameters(cfg)["total"]


@bank.mistake("experts everywhere", "only the MLP is replicated per expert; attention is shared")
def _model_experts_everywhere(cfg):
    counts = counting.count_parameters(cfg)
    return counts["total"] + (cfg.n_experts - 1) * cfg.n_layers * sum(counting.attention_parameters(cfg).values())


@bank.mistake(
    "RMSNorm with a bias", "RMSNorm has only a gain (d_model numbers), even when bias=True; only LayerNorm has a bias"
)
def _model_rmsnorm_bias(cfg):
    extra = cfg.d_model if cfg.norm == "rmsnorm" and cfg.bias else 0
    return counting.count_parameters(cfg)["total"] + (2 * cfg.n_layers + 1) * extra


@bank.mistake("router with a bias", "the router is bias-free (d_model x n_experts), whatever `bias` says")
def _model_router_bias(cfg):
    extra = cfg.n_experts if cfg.n_experts > 1 and cfg.bias else 0
    return counting.count_parameters(cfg)["total"] + cfg.n_layers * extra


@bank.mistake("only SwiGLU gated", "GeGLU is gated too (three matrices): use cfg.gated rather than testing for swiglu")
def _model_only_swiglu_gated(cfg):
    plain = cfg.with_(mlp="gelu") if cfg.mlp == "geglu" else cfg
    return counting.count_parameters(plain)["total"]


@bank.mistake(
    "positions unless rotary",
    "only learned positions are parameters (an n_ctx x d_model table); sinusoidal and 'none' add nothing",
)
def _model_positions_unless_rotary(cfg):
    extra = cfg.n_ctx * cfg.d_model if cfg.positions in ("sinusoidal", "none") else 0
    return counting.count_parameters(cfg)["total"] + extra


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("sum(numel) on meta")
def _model_meta_decoder(cfg):
    with torch.device("meta"):
        return sum(p.numel() for p in Decoder(cfg).parameters())


@bank.alternative("layer by layer")
def _model_layer_loop(cfg):
    per_layer = sum(counting.attention_parameters(cfg).values()) + cfg.n_experts * sum(
        counting.mlp_parameters(cfg).values()
    )
    per_layer += 2 * counting.norm_parameters(cfg) + (cfg.d_model * cfg.n_experts if cfg.n_experts > 1 else 0)
    total = sum(per_layer for _ in range(cfg.n_layers)) + counting.norm_parameters(cfg)
    total += cfg.d_vocab * cfg.d_model * (1 if cfg.tie_embeddings else 2)
    return total + (cfg.n_ctx * cfg.d_model if cfg.positions == "learned" else 0)


@bank.alternative("coarse groups")
def _model_by_groups(cfg):
    return sum(counting.group_counts(counting.count_parameters(cfg)).values())


MODEL = Exercise(
    name="model_parameter_count",
    reference=model_parameter_count,
    cases=_model_cases,
    tolerance="exact",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Split the model into embedding, positions, the blocks, a final norm and the unembedding, and count each.",
        "A block is attention, two norms and the MLP (times n_experts, plus a router, for a mixture of experts); "
        "rotary positions and tied unembeddings add nothing.",
    ],
)
EXERCISES = {MODEL.name: MODEL}


def check_model_parameter_count(fn):
    """Check a student's ``model_parameter_count``."""
    return MODEL.check(fn)
