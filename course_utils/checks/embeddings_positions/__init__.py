"""Checks for notebook 02 (embeddings and positions), one file per exercise:

- ``embedding_lookup``: a token id picks a ROW of ``W_E`` (d_vocab, d_model), repeats and order kept;
- ``sinusoidal_encoding``: the sinusoidal table, sine in even and cosine in odd dimensions, positions from 0;
- ``shift_rotation``: the block-diagonal R_k with PE(pos + k) = R_k PE(pos);
- ``embedding_backward``: the gradients of x = W_E[ids] + W_pos[:pos] by hand (repeated tokens add up);
- ``tied_embedding_backward``: dL/dW_E of a zero-layer model whose unembedding is W_Eᵀ (two shares);
- ``rope_rotate``: rotary positions on pairs of neighbouring features (the interleaved layout of RoFormer
  and Meta's Llama code; the rotate-half layout of GPT-NeoX and Hugging Face is a named mistake);
- ``alibi_bias``: ALiBi's head slopes and causal distance bias.
"""

from course_utils.checks.embeddings_positions.alibi_bias import ALIBI_BIAS, check_alibi_bias
from course_utils.checks.embeddings_positions.embedding_backward import EMBEDDING_BACKWARD, check_embedding_backward
from course_utils.checks.embeddings_positions.embedding_lookup import EMBEDDING_LOOKUP, check_embedding_lookup
from course_utils.checks.embeddings_positions.rope_rotate import ROPE_ROTATE, check_rope_rotate
from course_utils.checks.embeddings_positions.shift_rotation import SHIFT_ROTATION, check_shift_rotation
from course_utils.checks.embeddings_positions.sinusoidal_encoding import SINUSOIDAL_ENCODING, check_sinusoidal_encoding
from course_utils.checks.embeddings_positions.tied_embedding_backward import (
    TIED_EMBEDDING_BACKWARD,
    check_tied_embedding_backward,
)

EXERCISES = {
    ex.name: ex
    for ex in (
        EMBEDDING_LOOKUP,
        SINUSOIDAL_ENCODING,
        SHIFT_ROTATION,
        EMBEDDING_BACKWARD,
        TIED_EMBEDDING_BACKWARD,
        ROPE_ROTATE,
        ALIBI_BIAS,
    )
}

__all__ = [
    "ALIBI_BIAS",
    "EMBEDDING_BACKWARD",
    "EMBEDDING_LOOKUP",
    "EXERCISES",
    "ROPE_ROTATE",
    "SHIFT_ROTATION",
    "SINUSOIDAL_ENCODING",
    "TIED_EMBEDDING_BACKWARD",
    "check_alibi_bias",
    "check_embedding_backward",
    "check_embedding_lookup",
    "check_rope_rotate",
    "check_shift_rotation",
    "check_sinusoidal_encoding",
    "check_tied_embedding_backward",
]
