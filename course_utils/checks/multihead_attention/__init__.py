"""Checks for notebook 05 (multi-head attention), one file per exercise:

- ``split_heads``: (batch, pos, d_model) -> (batch, n_heads, pos, d_head), each head a contiguous block;
- ``merge_heads``: its inverse, the heads' outputs side by side again;
- ``multi_head_attention``: a whole ``MultiHeadAttention`` forward from scratch (the student writes the
  class; the check loads seeded weights into it and into ``torch.nn.MultiheadAttention``, the oracle);
- ``fused_multi_head_attention``: the same layer with one fused ``W_QKV`` projection and a causal option
  (checked against ``torch.nn.MultiheadAttention``, whose ``in_proj_weight`` is that projection);
- ``grouped_query_attention``: fewer key/value heads than query heads, each shared by a group (checked
  against ``torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)``);
- ``previous_token_scores``: each head's average weight on the key just before the query;
- ``induction_scores``: each head's average weight on the key after the earlier copy of the query's token.

``_patterns`` holds what the two head scores share: their cases (the trained toy model's patterns
among them) and the stripe average several of their mistakes take.
"""

from course_utils.checks.multihead_attention.fused_multi_head_attention import (
    FUSED_MULTI_HEAD_ATTENTION,
    check_fused_multi_head_attention,
)
from course_utils.checks.multihead_attention.grouped_query_attention import (
    GROUPED_QUERY_ATTENTION,
    check_grouped_query_attention,
)
from course_utils.checks.multihead_attention.induction_scores import INDUCTION_SCORES, check_induction_scores
from course_utils.checks.multihead_attention.merge_heads import MERGE_HEADS, check_merge_heads
from course_utils.checks.multihead_attention.multi_head_attention import (
    MULTI_HEAD_ATTENTION,
    check_multi_head_attention,
)
from course_utils.checks.multihead_attention.previous_token_scores import (
    PREVIOUS_TOKEN_SCORES,
    check_previous_token_scores,
)
from course_utils.checks.multihead_attention.split_heads import SPLIT_HEADS, check_split_heads

EXERCISES = {
    ex.name: ex
    for ex in (
        SPLIT_HEADS,
        MERGE_HEADS,
        MULTI_HEAD_ATTENTION,
        FUSED_MULTI_HEAD_ATTENTION,
        GROUPED_QUERY_ATTENTION,
        PREVIOUS_TOKEN_SCORES,
        INDUCTION_SCORES,
    )
}

__all__ = [
    "EXERCISES",
    "FUSED_MULTI_HEAD_ATTENTION",
    "GROUPED_QUERY_ATTENTION",
    "INDUCTION_SCORES",
    "MERGE_HEADS",
    "MULTI_HEAD_ATTENTION",
    "PREVIOUS_TOKEN_SCORES",
    "SPLIT_HEADS",
    "check_fused_multi_head_attention",
    "check_grouped_query_attention",
    "check_induction_scores",
    "check_merge_heads",
    "check_multi_head_attention",
    "check_previous_token_scores",
    "check_split_heads",
]
