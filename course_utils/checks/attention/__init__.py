"""Checks for notebook 03 (attention), one file per exercise:

- ``attention_scores``: q kᵀ / sqrt(d_head), one row per query;
- ``sdp_attention``: scaled dot-product attention without a mask, the softmax over the keys;
- ``blockwise_attention``: the same attention with an online softmax over blocks of keys (FlashAttention's
  forward), returning each query's log-sum-exp too;
- ``sdp_attention_backward``: dL/dq, dL/dk, dL/dv of that attention by hand, through the softmax Jacobian;
- ``blockwise_attention_backward``: the same gradients block by block from the forward's log-sum-exp
  (FlashAttention-2's backward);
- ``cross_attention_head``: queries from x, keys and values from a context of another width (the student
  writes the class);
- ``attention_head``: one head as a torch module (the student writes the class; the check copies in
  seeded weights, so only the maths is compared);
- ``attention_head_backward``: the gradients of that head's W_Q, W_K, W_V, W_O and of its input, by hand.

``_cases`` holds the inputs the first three share (the notebook's the / cat / sat example first).
"""

from course_utils.checks.attention.attention_head import ATTENTION_HEAD, check_attention_head
from course_utils.checks.attention.attention_head_backward import (
    ATTENTION_HEAD_BACKWARD,
    check_attention_head_backward,
)
from course_utils.checks.attention.attention_scores import ATTENTION_SCORES, check_attention_scores
from course_utils.checks.attention.blockwise_attention import BLOCKWISE_ATTENTION, check_blockwise_attention
from course_utils.checks.attention.blockwise_attention_backward import (
    BLOCKWISE_ATTENTION_BACKWARD,
    check_blockwise_attention_backward,
)
from course_utils.checks.attention.cross_attention_head import CROSS_ATTENTION_HEAD, check_cross_attention_head
from course_utils.checks.attention.sdp_attention import SDP_ATTENTION, check_sdp_attention
from course_utils.checks.attention.sdp_attention_backward import SDP_ATTENTION_BACKWARD, check_sdp_attention_backward

EXERCISES = {
    ex.name: ex
    for ex in (
        ATTENTION_SCORES,
        SDP_ATTENTION,
        BLOCKWISE_ATTENTION,
        SDP_ATTENTION_BACKWARD,
        BLOCKWISE_ATTENTION_BACKWARD,
        CROSS_ATTENTION_HEAD,
        ATTENTION_HEAD,
        ATTENTION_HEAD_BACKWARD,
    )
}

__all__ = [
    "ATTENTION_HEAD",
    "ATTENTION_HEAD_BACKWARD",
    "ATTENTION_SCORES",
    "BLOCKWISE_ATTENTION",
    "BLOCKWISE_ATTENTION_BACKWARD",
    "CROSS_ATTENTION_HEAD",
    "EXERCISES",
    "SDP_ATTENTION",
    "SDP_ATTENTION_BACKWARD",
    "check_attention_head",
    "check_attention_head_backward",
    "check_attention_scores",
    "check_blockwise_attention",
    "check_blockwise_attention_backward",
    "check_cross_attention_head",
    "check_sdp_attention",
    "check_sdp_attention_backward",
]
