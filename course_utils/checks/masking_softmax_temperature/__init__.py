"""Checks for notebook 04 (masking, softmax and temperature), one file per exercise:

- ``causal_mask``: an (n_ctx, n_ctx) torch.bool mask, True where the key is at or before the query;
- ``safe_masked_softmax``: a softmax over the allowed keys that never returns NaN (an empty row is zeros);
- ``left_pad_batch``: prompts of different lengths padded on the left, with a causal-and-padding mask and
  positions counted from each prompt's first token;
- ``cross_entropy``: the mean of -ln softmax(logits)[target] (oracle: ``torch.nn.functional.cross_entropy``);
- ``softmax_with_temperature``: softmax(logits / T); T = 0 is greedy, ties to the first maximum;
- ``top_k_top_p_filter``: top-k, then the top-p nucleus, each followed by a renormalisation;
- ``generate_tokens``: the generation loop (temperature, filters, one seeded draw, append, stop at eos),
  compared token for token with the course's sampler;
- ``beam_search``: the ``beam_width`` likeliest partial sequences by summed log-probability (one case keeps
  every sequence, so the answer is the likeliest of all);
- ``sliding_window_attention``: causal attention over the last ``window`` keys, computing only the band
  (the check counts the matmul FLOPs).

Sampling is checked through the distribution a sampler would draw from, or through draws from a generator
seeded the same way for the student and the reference, so every check is deterministic. ``_shared`` holds
the float64 shorthand and ``TableModel``, the toy language model the decoding checks run.
"""

from course_utils.checks.masking_softmax_temperature.beam_search import BEAM_SEARCH, check_beam_search
from course_utils.checks.masking_softmax_temperature.causal_mask import CAUSAL_MASK, check_causal_mask
from course_utils.checks.masking_softmax_temperature.cross_entropy import CROSS_ENTROPY, check_cross_entropy
from course_utils.checks.masking_softmax_temperature.generate_tokens import GENERATE_TOKENS, check_generate_tokens
from course_utils.checks.masking_softmax_temperature.left_pad_batch import LEFT_PAD_BATCH, check_left_pad_batch
from course_utils.checks.masking_softmax_temperature.safe_masked_softmax import (
    MASKED_SOFTMAX,
    check_safe_masked_softmax,
)
from course_utils.checks.masking_softmax_temperature.sliding_window_attention import (
    SLIDING_WINDOW_ATTENTION,
    check_sliding_window_attention,
)
from course_utils.checks.masking_softmax_temperature.softmax_with_temperature import (
    TEMPERATURE,
    check_softmax_with_temperature,
)
from course_utils.checks.masking_softmax_temperature.top_k_top_p_filter import TOP_K_TOP_P, check_top_k_top_p_filter

EXERCISES = {
    ex.name: ex
    for ex in (
        CAUSAL_MASK,
        MASKED_SOFTMAX,
        LEFT_PAD_BATCH,
        CROSS_ENTROPY,
        TEMPERATURE,
        TOP_K_TOP_P,
        GENERATE_TOKENS,
        BEAM_SEARCH,
        SLIDING_WINDOW_ATTENTION,
    )
}

__all__ = [
    "BEAM_SEARCH",
    "CAUSAL_MASK",
    "CROSS_ENTROPY",
    "EXERCISES",
    "GENERATE_TOKENS",
    "LEFT_PAD_BATCH",
    "MASKED_SOFTMAX",
    "SLIDING_WINDOW_ATTENTION",
    "TEMPERATURE",
    "TOP_K_TOP_P",
    "check_beam_search",
    "check_causal_mask",
    "check_cross_entropy",
    "check_generate_tokens",
    "check_left_pad_batch",
    "check_safe_masked_softmax",
    "check_sliding_window_attention",
    "check_softmax_with_temperature",
    "check_top_k_top_p_filter",
]
