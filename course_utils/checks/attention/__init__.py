"""Checks for notebook 03 (attention), one file per exercise:

- ``attention_scores``: q kᵀ / sqrt(d_head), one row per query;
- ``sdp_attention``: scaled dot-product attention without a mask, the softmax over the keys;
- ``attention_head``: one head as a torch module (the student writes the class; the check copies in
  seeded weights, so only the maths is compared).

``_cases`` holds the inputs the first two share (the notebook's the / cat / sat example first).
"""

from course_utils.checks.attention.attention_head import ATTENTION_HEAD, check_attention_head
from course_utils.checks.attention.attention_scores import ATTENTION_SCORES, check_attention_scores
from course_utils.checks.attention.sdp_attention import SDP_ATTENTION, check_sdp_attention

EXERCISES = {ex.name: ex for ex in (ATTENTION_SCORES, SDP_ATTENTION, ATTENTION_HEAD)}

__all__ = [
    "ATTENTION_HEAD",
    "ATTENTION_SCORES",
    "EXERCISES",
    "SDP_ATTENTION",
    "check_attention_head",
    "check_attention_scores",
    "check_sdp_attention",
]
