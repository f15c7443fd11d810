"""Checks for notebook 09 (a small GPT), one file per exercise:

- ``layer_norm``: LayerNorm over the last axis, the variance dividing by d_model;
- ``block_forward``: a pre-norm block's forward, causal, with both residual additions;
- ``next_token_loss``: the mean cross-entropy of each position's logits against the next token;
- ``sample_tokens``: the sampling loop without a cache, drawing with the generator it is given;
- ``kv_cache_step``: one attention step that appends to the KV cache and attends over all of it.

References come from the library (``layernorm``, ``gpt``, ``training``, ``generation``); the models
in the cases are tiny and seeded (``_cases.tiny_model``).
"""

from course_utils.checks.small_gpt.block_forward import BLOCK_FORWARD, check_block_forward
from course_utils.checks.small_gpt.kv_cache_step import KV_CACHE_STEP, check_kv_cache_step
from course_utils.checks.small_gpt.layer_norm import LAYER_NORM, check_layer_norm
from course_utils.checks.small_gpt.next_token_loss import NEXT_TOKEN_LOSS, check_next_token_loss
from course_utils.checks.small_gpt.sample_tokens import SAMPLE_TOKENS, check_sample_tokens

EXERCISES = {ex.name: ex for ex in (LAYER_NORM, BLOCK_FORWARD, NEXT_TOKEN_LOSS, SAMPLE_TOKENS, KV_CACHE_STEP)}

__all__ = [
    "BLOCK_FORWARD",
    "EXERCISES",
    "KV_CACHE_STEP",
    "LAYER_NORM",
    "NEXT_TOKEN_LOSS",
    "SAMPLE_TOKENS",
    "check_block_forward",
    "check_kv_cache_step",
    "check_layer_norm",
    "check_next_token_loss",
    "check_sample_tokens",
]
