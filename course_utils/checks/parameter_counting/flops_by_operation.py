"""Exercise ``flops_by_operation(cfg, seq_len)``: a token's forward FLOPs, operation by operation (Kaplan et
al. 2020, Table 1, in the course's conventions).

Required form (stated in the notebook): a dict with the keys ``qkv``, ``scores``, ``reduce``, ``output``,
``mlp``, ``unembedding`` and ``total``, each a whole number of FLOPs per token summed over the layers:
2 FLOPs per multiply-add, matrix products only (no biases, norms, softmax or activations), attention as
the dense square of ``seq_len`` keys, a mixture of experts through its ``experts_per_token`` experts
and its router, the unembedding a product even when tied, the embedding lookup free.
"""

from __future__ import annotations

import random

from course_utils.counting import compute, parameters as counting
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.counting.parameters import ModelConfig


def flops_by_operation(cfg: ModelConfig, seq_len: int) -> dict[str, int]:
    """Reference: ``compute.forward_flops_by_operation``, tested against FlopCounterMode module by module."""
    return compute.forward_flops_by_operation(cfg, seq_len)


def _cases(seed: int) -> list[Case]:
    seqs, n_layers = [1024, 4096, 2048, 512], 32
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        seqs, n_layers = [rng.randint(100, 4100) for _ in range(4)], rng.randint(4, 40)  # 4,001 lengths
    configs = {
        "GPT-2 small (tied)": counting.GPT2_SMALL,
        f"Mixtral 8x7B's shape with {n_layers} layers (GQA, SwiGLU, top-2 of 8 experts)": counting.MIXTRAL_8X7B.with_(
            n_layers=n_layers
        ),
        "GPT-3 175B (tied)": counting.GPT3_175B,
        "GPT-2 small with 2 experts, top-1": counting.GPT2_SMALL.with_(n_experts=2, experts_per_token=1),
    }
    return [Case(f"{label}, {seq:,} tokens", (cfg, seq)) for (label, cfg), seq in zip(configs.items(), seqs)]


def _shifted(cfg, seq_len, **changes):
    return {**flops_by_operation(cfg, seq_len), **changes}


def _with_total(parts):
    parts = {key: value for key, value in parts.items() if key != "total"}
    return {**parts, "total": sum(parts.values())}


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "multiply-add as one FLOP", "a multiply-add counts as 2 FLOPs: a token times a weight matrix costs 2 per weight"
)
def _half(cfg, seq_len):
    return {key: value // 2 for key, value in flops_by_operation(cfg, seq_len).items()}


@bank.mistake(
    "no reduce over the values",
    "the attention pattern is used in a second product: the weighted sum of the values costs as much as the scores",
)
def _no_reduce(cfg, seq_len):
    return _with_total(_shifted(cfg, seq_len, reduce=0))


@bank.mistake(
    "grouped-query attention ignored",
    "with n_kv_heads < n_heads the keys and values are only n_kv_heads · d_head wide: W_K and W_V are smaller than W_Q",
)
def _no_gqa(cfg, seq_len):
    return _with_total(_shifted(cfg, seq_len, qkv=6 * cfg.n_layers * cfg.d_model**2))


@bank.mistake(
    "every expert", "a token runs through only experts_per_token of the experts (and the router): count those"
)
def _every_expert(cfg, seq_len):
    return _with_total(flops_by_operation(cfg.with_(experts_per_token=cfg.n_experts), seq_len))


@bank.mistake(
    "tied unembedding left out",
    "a tied unembedding stores no new weights, but multiplying by it is still a product: count 2 · d_model · d_vocab",
)
def _tied_free(cfg, seq_len):
    return _with_total(_shifted(cfg, seq_len, unembedding=0 if cfg.tie_embeddings else 2 * cfg.d_model * cfg.d_vocab))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("from the counter's active parameters, without biases")
def _alt_from_counts(cfg, seq_len):
    counts = counting.active_parameters(cfg.with_(bias=False))  # summed over the layers already
    attention = 2 * cfg.n_layers * seq_len * cfg.d_model
    parts = {
        "qkv": 2 * (counts["query"] + counts["key"] + counts["value"]),
        "scores": attention,
        "reduce": attention,
        "output": 2 * counts["output"],
        "mlp": 2 * (counts["mlp_up"] + counts["mlp_gate"] + counts["mlp_down"] + counts["router"]),
        "unembedding": 2 * cfg.d_model * cfg.d_vocab,
    }
    return _with_total(parts)


@bank.alternative("one layer in floats, then times n_layers")
def _alt_per_layer(cfg, seq_len):
    d, d_kv = float(cfg.d_model), float(cfg.kv_heads * cfg.d_head)
    mats = 3.0 if cfg.gated else 2.0
    layer = {
        "qkv": 2 * (d * d + 2 * d * d_kv),
        "scores": 2.0 * seq_len * d,
        "reduce": 2.0 * seq_len * d,
        "output": 2 * d * d,
        "mlp": 2 * (cfg.experts_per_token * mats * d * cfg.mlp_width + (d * cfg.n_experts if cfg.n_experts > 1 else 0)),
    }
    parts = {key: cfg.n_layers * value for key, value in layer.items()}
    parts["unembedding"] = 2 * d * cfg.d_vocab
    parts["total"] = sum(parts.values())
    return parts


@bank.alternative("head by head")
def _alt_heads(cfg, seq_len):
    per_head = 2 * cfg.d_model * cfg.d_head  # one head's slice of a projection, per token
    per_layer = {
        "qkv": cfg.n_heads * per_head + 2 * cfg.kv_heads * per_head,
        "scores": sum(2 * seq_len * cfg.d_head for _ in range(cfg.n_heads)),
        "reduce": sum(2 * seq_len * cfg.d_head for _ in range(cfg.n_heads)),
        "output": cfg.n_heads * per_head,
        "mlp": 2
        * cfg.d_model
        * (cfg.experts_per_token * (2 + cfg.gated) * cfg.mlp_width + cfg.n_experts * (cfg.n_experts > 1)),
    }
    flops = {key: cfg.n_layers * value for key, value in per_layer.items()}
    return _with_total({**flops, "unembedding": 2 * cfg.d_vocab * cfg.d_model})


FLOPS_BY_OPERATION = Exercise(
    name="flops_by_operation",
    reference=flops_by_operation,
    cases=_cases,
    tolerance="exact",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Go through one layer in the order a token's vector meets the matrices, count the multiply-adds of each "
        "product, double them, and multiply by the number of layers; the unembedding comes once at the end.",
        "A product with a (d_in, d_out) matrix is d_in · d_out multiply-adds per token. The scores compare the "
        "token's query with seq_len keys across all heads, and the values are mixed with the same pattern.",
    ],
)
EXERCISES = {FLOPS_BY_OPERATION.name: FLOPS_BY_OPERATION}


def check_flops_by_operation(fn):
    """Check a student's ``flops_by_operation(cfg, seq_len)``."""
    return FLOPS_BY_OPERATION.check(fn)
