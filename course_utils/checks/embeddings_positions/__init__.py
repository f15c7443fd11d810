"""Checks for notebook 02 (embeddings and positions), one file per exercise:

- ``embedding_lookup``: a token id picks a ROW of ``W_E`` (d_vocab, d_model), repeats and order kept;
- ``sinusoidal_encoding``: the sinusoidal table, sine in even and cosine in odd dimensions, positions from 0;
- ``rope_rotate``: rotary positions on pairs of neighbouring features (the interleaved layout of RoFormer
  and Meta's Llama code; the rotate-half layout of GPT-NeoX and Hugging Face is a named mistake).
"""

from course_utils.checks.embeddings_positions.embedding_lookup import EMBEDDING_LOOKUP, check_embedding_lookup
from course_utils.checks.embeddings_positions.rope_rotate import ROPE_ROTATE, check_rope_rotate
from course_utils.checks.embeddings_positions.sinusoidal_encoding import SINUSOIDAL_ENCODING, check_sinusoidal_encoding

EXERCISES = {ex.name: ex for ex in (EMBEDDING_LOOKUP, SINUSOIDAL_ENCODING, ROPE_ROTATE)}

__all__ = [
    "EMBEDDING_LOOKUP",
    "EXERCISES",
    "ROPE_ROTATE",
    "SINUSOIDAL_ENCODING",
    "check_embedding_lookup",
    "check_rope_rotate",
    "check_sinusoidal_encoding",
]
