"""Exercise ``attention_parameter_count(d_model, n_heads, n_kv_heads, bias)``: the parameters of one
layer's attention (W_Q, W_K, W_V, W_O and, with ``bias``, their biases), grouped-query attention included.

Required form (stated in the notebook): a whole number; K and V have ``n_kv_heads`` heads of
d_head = d_model / n_heads, Q and O stay d_model wide.
"""

from __future__ import annotations

import random
from course_utils.counting import parameters as counting
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.parameter_counting._layers import layer_config, meta_numel


def attention_parameter_count(d_model: int, n_heads: int, n_kv_heads: int, bias: bool) -> int:
    """Reference: W_Q, W_K, W_V, W_O of one layer (K and V have n_kv_heads heads), with their biases."""
    return sum(counting.attention_parameters(layer_config(d_model, n_heads, n_kv_heads, bias=bias)).values())


def _attention_cases(seed: int) -> list[Case]:
    shapes = [(768, 12, 12, True), (4096, 32, 8, False), (512, 8, 2, True), (96, 6, 1, True)]
    if seed:  # hidden cases: widths drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        widths = [rng.randint(1, 64) for _ in range(4)]
        shapes = [(64 * widths[0], 4, 2, True), (48 * widths[1], 6, 3, False), (40 * widths[2], 8, 8, True),
                  (12 * widths[3], 12, 4, True)]
    return [Case(f"d_model={d}, {h} heads, {kv} KV heads, bias={b}", (d, h, kv, b)) for d, h, kv, b in shapes]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no GQA", "with fewer KV heads, W_K and W_V only produce n_kv_heads * d_head outputs: they shrink")
def _attn_no_gqa(d_model, n_heads, n_kv_heads, bias):
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


@bank.mistake("no biases", "bias=True: each of the four projections has one bias per output it produces")
def _attn_no_bias(d_model, n_heads, n_kv_heads, bias):
    d_kv = d_model // n_heads * n_kv_heads
    return 2 * d_model * d_model + 2 * d_model * d_kv


@bank.mistake(
    "all four shrink", "only keys and values are shared between query heads; W_Q and W_O stay d_model x d_model"
)
def _attn_all_shrink(d_model, n_heads, n_kv_heads, bias):
    d_kv = d_model // n_heads * n_kv_heads
    return 4 * d_model * d_kv + (4 * d_kv if bias else 0)


@bank.mistake(
    "full-width biases", "a bias is as long as its layer's output: the K and V biases have n_kv_heads * d_head entries"
)
def _attn_full_width_biases(d_model, n_heads, n_kv_heads, bias):
    d_kv = d_model // n_heads * n_kv_heads
    return 2 * d_model * d_model + 2 * d_model * d_kv + (4 * d_model if bias else 0)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("head by head")
def _attn_per_head(d_model, n_heads, n_kv_heads, bias):
    d_head, total = d_model // n_heads, 0
    for _ in range(n_heads):  # every query head: its W_Q slice and its share of W_O
        total += 2 * d_model * d_head + (d_head if bias else 0)
    for _ in range(n_kv_heads):  # every key/value head: its W_K and W_V slices
        total += 2 * d_model * d_head + (2 * d_head if bias else 0)
    return total + (d_model if bias else 0)


@bank.alternative("nn.Linear on meta")
def _attn_meta_linears(d_model, n_heads, n_kv_heads, bias):
    d_kv = d_model // n_heads * n_kv_heads
    return meta_numel((d_model, d_model, bias), (d_model, d_kv, bias), (d_model, d_kv, bias), (d_model, d_model, bias))


@bank.alternative("share of KV heads")
def _attn_ratio(d_model, n_heads, n_kv_heads, bias):
    kv_share = n_kv_heads / n_heads
    return round((2 + 2 * kv_share) * d_model * (d_model + int(bias)))


ATTENTION = Exercise(
    name="attention_parameter_count",
    reference=attention_parameter_count,
    cases=_attention_cases,
    tolerance="exact",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Count the four projections one at a time: how many inputs and how many outputs does each have?",
        "Queries and the output projection are d_model wide on both sides; keys and values have n_kv_heads "
        "heads of d_head = d_model / n_heads; a bias adds one number per output.",
    ],
)
EXERCISES = {ATTENTION.name: ATTENTION}


def check_attention_parameter_count(fn):
    """Check a student's ``attention_parameter_count``."""
    return ATTENTION.check(fn)
