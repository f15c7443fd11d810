"""Checks for notebook 10 (today's block: a Llama-style model), one file per exercise:

- ``rms_norm``: an ``RMSNorm`` module (a gain ``w``, eps inside the root, float32 for half inputs and the
  output in the input's dtype), against ``course_utils.llama.RMSNorm``;
- ``rotate_queries_keys``: RoPE on a layer's query and key heads at positions offset, offset + 1, ... (a KV
  cache), in either pair layout, against ``course_utils.llama.rotate_queries_keys``;
- ``rope_layout``: ``to_halves_layout``, the per-head reorder of W_Q / W_K that turns interleaved RoPE into
  rotate-half RoPE with the same attention, against ``course_utils.llama.to_halves_layout``;
- ``swiglu_width``: Meta's hidden width, int(8/3 · d_model) rounded up to a multiple;
- ``swiglu_feed_forward``: a ``SwiGLU`` module (W_gate, W_in, W_out), against ``course_utils.moe.SwiGLU``.
"""

from course_utils.checks.todays_block.rms_norm import RMS_NORM, check_rms_norm
from course_utils.checks.todays_block.rope_layout import ROPE_LAYOUT, check_rope_layout
from course_utils.checks.todays_block.rotate_queries_keys import ROTATE_QUERIES_KEYS, check_rotate_queries_keys
from course_utils.checks.todays_block.swiglu_feed_forward import SWIGLU_FEED_FORWARD, check_swiglu_feed_forward
from course_utils.checks.todays_block.swiglu_width import SWIGLU_WIDTH, check_swiglu_width

EXERCISES = {
    ex.name: ex
    for ex in (
        RMS_NORM,
        ROTATE_QUERIES_KEYS,
        ROPE_LAYOUT,
        SWIGLU_WIDTH,
        SWIGLU_FEED_FORWARD,
    )
}

__all__ = [
    "EXERCISES",
    "RMS_NORM",
    "ROPE_LAYOUT",
    "ROTATE_QUERIES_KEYS",
    "SWIGLU_FEED_FORWARD",
    "SWIGLU_WIDTH",
    "check_rms_norm",
    "check_rope_layout",
    "check_rotate_queries_keys",
    "check_swiglu_feed_forward",
    "check_swiglu_width",
]
