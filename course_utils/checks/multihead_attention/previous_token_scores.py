"""Exercise ``previous_token_scores(pattern)``: how much each head attends to the token just before the query.

Required form (stated in the notebook): pattern (batch, head, q_pos, k_pos) -> one score per head,
shape (head,): the weight on key = query - 1, averaged over the batch and over queries 1 to the end.
Checked on random and hand-built patterns and on the trained toy model's (``_patterns``).
"""

from __future__ import annotations

import torch

from course_utils.attention import induction
from course_utils.checks.bank import Bank
from course_utils.checks.core import Exercise
from course_utils.checks.multihead_attention._patterns import score_cases, stripe_mean

bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "the diagonal itself",
    "you measured attention to the query's own position: the previous "
    "token is one column to the LEFT of the diagonal (key = query - 1)",
)
def prev_self(pattern):
    return stripe_mean(pattern, 0)


@bank.mistake(
    "the next token",
    "you read the stripe above the diagonal (key = query + 1), which a causal "
    "pattern never attends to: the previous token is key = query - 1",
)
def prev_next(pattern):
    return stripe_mean(pattern, 1)


@bank.mistake(
    "divides by every query",
    "query 0 has no previous token: average over queries 1 to the end only (n_ctx - 1 of them), not over all n_ctx",
)
def prev_all_queries(pattern):
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1).mean(dim=0) / pattern.shape[-1]


@bank.mistake(
    "averaged over heads too",
    "return one score per head, shape (head,): average over the batch and the queries, not over the heads",
)
def prev_over_heads(pattern):
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean()


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("advanced indexing")
def _prev_gather(pattern):
    n = pattern.shape[-1]
    q = torch.arange(1, n)
    return pattern[..., q, q - 1].mean(dim=(0, -1))


@bank.alternative("multiply by a shifted identity")
def _prev_shifted_eye(pattern):
    n = pattern.shape[-1]
    below = torch.diag(torch.ones(n - 1, dtype=pattern.dtype), -1)  # 1 at (q, q - 1)
    return (pattern * below).sum(dim=-1)[..., 1:].mean(dim=(0, -1))


@bank.alternative("float32 loops")
def _prev_loops_float32(pattern):
    p = pattern.float()
    batch, heads, n, _ = p.shape
    return torch.tensor(
        [
            sum(p[b, h, q, q - 1].item() for b in range(batch) for q in range(1, n)) / (batch * (n - 1))
            for h in range(heads)
        ]
    )


PREVIOUS_TOKEN_SCORES = Exercise(
    name="previous_token_scores",
    reference=induction.previous_token_scores,
    cases=score_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "For each query, how much weight goes to the key right before it? Collect those numbers, then average them.",
        "Those weights lie on the stripe just below the diagonal of the (q_pos, k_pos) table. Take that stripe "
        "(torch has a function for a diagonal with an offset, over chosen axes) and average over the batch and "
        "along the stripe, keeping the head axis.",
    ],
)
EXERCISES = {PREVIOUS_TOKEN_SCORES.name: PREVIOUS_TOKEN_SCORES}


def check_previous_token_scores(fn):
    """Check ``previous_token_scores(pattern)``, also on the trained toy model's patterns."""
    return PREVIOUS_TOKEN_SCORES.check(fn)
