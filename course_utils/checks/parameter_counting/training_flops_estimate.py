"""Exercise ``training_flops_estimate(cfg, n_tokens)``: the 6ND estimate of a training run's FLOPs.

Required form (stated in the notebook): a number (compared at float32 precision), with N the active
non-embedding parameters, what one token runs through (for a mixture of experts, only its k experts).
"""

from __future__ import annotations

import random
import math

from course_utils.counting import compute, parameters as counting
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.counting.parameters import ModelConfig


def training_flops_estimate(cfg: ModelConfig, n_tokens: int) -> float:
    """Reference: ``6 N D`` with N the active non-embedding parameters (what a token runs through)."""
    return compute.training_flops(compute.approximate_forward_flops(cfg) / 2, n_tokens)


def _flops_cases(seed: int) -> list[Case]:
    widths, n_layers, tokens = [seed], 32 - seed, [10**9, 10**12, 300 * 10**9]
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        widths, n_layers = [rng.randint(1, 24)], rng.randint(8, 31)
        tokens = [rng.randint(1, 999) * 10**power for power in (7, 10, 9)]
    dense = ModelConfig(
        d_vocab=50257, n_ctx=1024, d_model=768 + 96 * widths[0], n_layers=12, n_heads=12, tie_embeddings=False
    )
    moe = counting.MIXTRAL_8X7B.with_(n_layers=n_layers)
    if not seed:
        labels = ["a GPT-2-small-like model, 1e9 tokens", "Mixtral-like, 1e12 tokens", "GPT-3 175B, 3e11 tokens"]
    else:
        labels = [f"{model}, {n:.3g} tokens" for model, n in zip(("GPT-2-like", "Mixtral-like", "GPT-3 175B"), tokens)]
    return [Case(label, (cfg, n)) for label, cfg, n in zip(labels, (dense, moe, counting.GPT3_175B), tokens)]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("forward only", "training also runs the backward pass, which costs about twice the forward: 6, not 2")
def _flops_forward_only(cfg, n_tokens):
    return compute.approximate_forward_flops(cfg) * n_tokens


@bank.mistake("all experts", "a token only runs through experts_per_token experts: use the active parameters")
def _flops_all_experts(cfg, n_tokens):
    counts = counting.count_parameters(cfg)
    return 6 * (counts["total"] - counts["embedding"] - counts["positions"] - counts["unembedding"]) * n_tokens


@bank.mistake("embeddings included", "leave out the embedding, position and unembedding matrices, as the 6ND rule does")
def _flops_with_embeddings(cfg, n_tokens):
    return 6 * counting.active_parameters(cfg)["total"] * n_tokens


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("forward plus backward")
def _flops_three_passes(cfg, n_tokens):
    forward = compute.approximate_forward_flops(cfg) * n_tokens
    return forward + 2 * forward  # backward: gradients for activations and for weights, one forward's worth each


@bank.alternative("coarse groups")
def _flops_from_groups(cfg, n_tokens):
    groups = counting.group_counts(counting.active_parameters(cfg))
    n = groups["attention"] + groups["mlp"] + groups["norms"]
    return 6.0 * n * n_tokens


@bank.alternative("in log space")
def _flops_log_space(cfg, n_tokens):
    n = compute.approximate_forward_flops(cfg) / 2
    return math.exp(math.log(6) + math.log(n) + math.log(n_tokens))


FLOPS = Exercise(
    name="training_flops_estimate",
    reference=training_flops_estimate,
    cases=_flops_cases,
    tolerance="float32",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Per token and per parameter: how many FLOPs does the forward pass take, and how many the backward?",
        "Forward is 2 per parameter, backward twice that; "
        "N is what one token runs through, without the embedding matrices.",
    ],
)
EXERCISES = {FLOPS.name: FLOPS}


def check_training_flops_estimate(fn):
    """Check a student's ``training_flops_estimate``."""
    return FLOPS.check(fn)
