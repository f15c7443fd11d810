"""Checks for notebook 04 (masking, softmax and temperature), one file per exercise:

- ``causal_mask``: an (n_ctx, n_ctx) torch.bool mask, True where the key is at or before the query;
- ``safe_masked_softmax``: a softmax over the allowed keys that never returns NaN (an empty row is zeros);
- ``cross_entropy``: the mean of -ln softmax(logits)[target] (oracle: ``torch.nn.functional.cross_entropy``);
- ``softmax_with_temperature``: softmax(logits / T); T = 0 is greedy, ties to the first maximum;
- ``top_k_top_p_filter``: top-k, then the top-p nucleus, each followed by a renormalisation.

Sampling is checked through the distribution a sampler would draw from, so every check is deterministic.
``_shared`` holds the worked example's logits (CAT, DOG, IS, LOVELY) and the no-NaN property.
"""

from course_utils.checks.masking_softmax_temperature.causal_mask import CAUSAL_MASK, check_causal_mask
from course_utils.checks.masking_softmax_temperature.cross_entropy import CROSS_ENTROPY, check_cross_entropy
from course_utils.checks.masking_softmax_temperature.safe_masked_softmax import (
    MASKED_SOFTMAX,
    check_safe_masked_softmax,
)
from course_utils.checks.masking_softmax_temperature.softmax_with_temperature import (
    TEMPERATURE,
    check_softmax_with_temperature,
)
from course_utils.checks.masking_softmax_temperature.top_k_top_p_filter import TOP_K_TOP_P, check_top_k_top_p_filter

EXERCISES = {ex.name: ex for ex in (CAUSAL_MASK, MASKED_SOFTMAX, CROSS_ENTROPY, TEMPERATURE, TOP_K_TOP_P)}

__all__ = [
    "CAUSAL_MASK",
    "CROSS_ENTROPY",
    "EXERCISES",
    "MASKED_SOFTMAX",
    "TEMPERATURE",
    "TOP_K_TOP_P",
    "check_causal_mask",
    "check_cross_entropy",
    "check_safe_masked_softmax",
    "check_softmax_with_temperature",
    "check_top_k_top_p_filter",
]
