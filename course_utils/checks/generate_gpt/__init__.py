"""Checks for notebook 11 (sample from the GPT, look inside it, open GPT-2), one file per exercise:

- ``residual_writes``: every write into the residual stream, against ``GPT.residual_writes``;
- ``sample_tokens``: the sampling loop without a cache for prompts of different lengths, left-padded (``padded``);
- ``sample_with_cache``: the sampling loop driving ``model(tokens, cache)``, the same tokens as ``generate``'s;
- ``head_ablation_cost``: the loss change at every position when one head is zero- or mean-ablated;
- ``convert_gpt2_weights``: Hugging Face GPT-2's tensors in the course's names and layouts.

The tiny seeded models in the cases are ``checks.shared.tiny_model``.
"""

from course_utils.checks.generate_gpt.convert_gpt2_weights import CONVERT_GPT2_WEIGHTS, check_convert_gpt2_weights
from course_utils.checks.generate_gpt.head_ablation_cost import HEAD_ABLATION_COST, check_head_ablation_cost
from course_utils.checks.generate_gpt.residual_writes import RESIDUAL_WRITES, check_residual_writes
from course_utils.checks.generate_gpt.sample_tokens import SAMPLE_TOKENS, check_sample_tokens
from course_utils.checks.generate_gpt.sample_with_cache import SAMPLE_WITH_CACHE, check_sample_with_cache

EXERCISES = {
    ex.name: ex
    for ex in (
        SAMPLE_TOKENS,
        SAMPLE_WITH_CACHE,
        RESIDUAL_WRITES,
        HEAD_ABLATION_COST,
        CONVERT_GPT2_WEIGHTS,
    )
}

__all__ = [
    "CONVERT_GPT2_WEIGHTS",
    "EXERCISES",
    "HEAD_ABLATION_COST",
    "RESIDUAL_WRITES",
    "SAMPLE_TOKENS",
    "SAMPLE_WITH_CACHE",
    "check_convert_gpt2_weights",
    "check_head_ablation_cost",
    "check_residual_writes",
    "check_sample_tokens",
    "check_sample_with_cache",
]
