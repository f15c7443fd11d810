"""Checks for notebook 12 (today's block: a Llama-style model), one file per exercise:

- ``rms_norm``: an ``RMSNorm`` module (a gain ``w``, eps inside the root, float32 for half inputs and the
  output in the input's dtype), against ``course_utils.llama.RMSNorm``;
- ``rotate_queries_keys``: RoPE on a layer's query and key heads at positions offset, offset + 1, ... (a KV
  cache), in either pair layout, against ``course_utils.llama.rotate_queries_keys``;
- ``rope_layout``: ``to_halves_layout``, the per-head reorder of W_Q / W_K that turns interleaved RoPE into
  rotate-half RoPE with the same attention, against ``course_utils.llama.to_halves_layout``;
- ``swiglu_width``: Meta's hidden width, int(8/3 · d_model) rounded up to a multiple;
- ``swiglu_feed_forward``: a ``SwiGLU`` module (W_gate, W_in, W_out), against ``course_utils.moe.SwiGLU``;
- ``rotary_attention``: notebook 05's grouped-query attention with RoPE inside and a KV cache (checked
  against ``course_utils.llama.RotaryAttention``, whole and in chunks, both pair layouts);
- ``llama_block``: the pre-norm block of RMSNorm, that attention and SwiGLU (against ``llama.LlamaBlock``);
- ``llama_model``: the whole model, with an untied unembedding, extending a ``KVCache`` (against ``llama.Llama``).

``_modules`` holds what the last three share: seeded course weights loaded by name, and feeding a
sequence in chunks with the cache.
"""

from course_utils.checks.todays_block.llama_block import LLAMA_BLOCK, check_llama_block
from course_utils.checks.todays_block.llama_model import LLAMA_MODEL, check_llama_model
from course_utils.checks.todays_block.rms_norm import RMS_NORM, check_rms_norm
from course_utils.checks.todays_block.rope_layout import ROPE_LAYOUT, check_rope_layout
from course_utils.checks.todays_block.rotary_attention import ROTARY_ATTENTION, check_rotary_attention
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
        ROTARY_ATTENTION,
        LLAMA_BLOCK,
        LLAMA_MODEL,
    )
}

__all__ = [
    "EXERCISES",
    "LLAMA_BLOCK",
    "LLAMA_MODEL",
    "RMS_NORM",
    "ROPE_LAYOUT",
    "ROTARY_ATTENTION",
    "ROTATE_QUERIES_KEYS",
    "SWIGLU_FEED_FORWARD",
    "SWIGLU_WIDTH",
    "check_llama_block",
    "check_llama_model",
    "check_rms_norm",
    "check_rope_layout",
    "check_rotary_attention",
    "check_rotate_queries_keys",
    "check_swiglu_feed_forward",
    "check_swiglu_width",
]
