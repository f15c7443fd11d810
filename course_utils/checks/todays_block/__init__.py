"""Checks for notebook 10 (today's block), one file per exercise:

- ``rotary_attention``: notebook 05's grouped-query attention with RoPE inside and a KV cache (checked
  against ``course_utils.llama.RotaryAttention``, whole and in chunks, both pair layouts);
- ``llama_block``: the pre-norm block of RMSNorm, that attention and SwiGLU (against ``llama.LlamaBlock``);
- ``llama_model``: the whole model, with an untied unembedding, extending a ``KVCache`` (against ``llama.Llama``).

``_modules`` holds what the three share: seeded course weights loaded by name, and feeding a
sequence in chunks with the cache.
"""

from course_utils.checks.todays_block.llama_block import LLAMA_BLOCK, check_llama_block
from course_utils.checks.todays_block.llama_model import LLAMA_MODEL, check_llama_model
from course_utils.checks.todays_block.rotary_attention import ROTARY_ATTENTION, check_rotary_attention

EXERCISES = {ex.name: ex for ex in (ROTARY_ATTENTION, LLAMA_BLOCK, LLAMA_MODEL)}

__all__ = [
    "EXERCISES",
    "LLAMA_BLOCK",
    "LLAMA_MODEL",
    "ROTARY_ATTENTION",
    "check_llama_block",
    "check_llama_model",
    "check_rotary_attention",
]
