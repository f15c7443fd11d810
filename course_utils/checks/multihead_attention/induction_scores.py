"""Exercise ``induction_scores(pattern, half_len)``: how much each head attends to the token after the
earlier copy of the query's token.

Required form (stated in the notebook): pattern (batch, head, q_pos, k_pos) of sequences whose first
``half_len`` tokens repeat once -> one score per head, shape (head,): the weight on key = query - half_len + 1,
averaged over the batch and over the second-half queries (query >= half_len) only. Checked on random and
hand-built patterns and on the trained toy model's (``_patterns``).
"""

from __future__ import annotations

import numpy as np
import torch

from course_utils.attention import induction
from course_utils.checks.bank import Bank
from course_utils.checks.core import Exercise
from course_utils.checks.multihead_attention._patterns import score_cases, stripe_mean

bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "the earlier copy itself",
    "you measured attention to the earlier copy of the query's own "
    "token (key = query - half_len); an induction head looks at the token AFTER it, key = query - half_len + 1",
)
def ind_copy(pattern, half_len):
    return stripe_mean(pattern, -half_len)


@bank.mistake(
    "first-half queries included",
    "only queries in the repeat (query >= half_len) have an earlier copy: leave out the queries of the first half",
)
def ind_all_queries(pattern, half_len):
    return stripe_mean(pattern, -(half_len - 1))


@bank.mistake(
    "one too far", "the token that came next last time is at key = query - half_len + 1, not query - half_len + 2"
)
def ind_too_far(pattern, half_len):
    return stripe_mean(pattern, -(half_len - 2), first=2)


@bank.mistake(
    "averaged over heads too",
    "return one score per head, shape (head,): average over the batch and the queries, not over the heads",
)
def ind_over_heads(pattern, half_len):
    return pattern.diagonal(offset=-(half_len - 1), dim1=-2, dim2=-1)[..., 1:].mean()


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("advanced indexing")
def _ind_indexing(pattern, half_len):
    q = torch.arange(half_len, pattern.shape[-1])
    return pattern[..., q, q - half_len + 1].mean(dim=(0, -1))


@bank.alternative("a boolean target table")
def _ind_mask(pattern, half_len):
    n = pattern.shape[-1]
    qs, ks = torch.arange(n)[:, None], torch.arange(n)[None, :]
    target = (qs >= half_len) & (ks == qs - half_len + 1)  # (q_pos, k_pos)
    return (pattern * target).sum(dim=(-2, -1)).mean(dim=0) / (n - half_len)


@bank.alternative("float32 loops returning a NumPy array")
def _ind_loops_float32(pattern, half_len):
    p = pattern.float()
    batch, heads, n, _ = p.shape
    picks = [
        [p[b, h, q, q - half_len + 1].item() for b in range(batch) for q in range(half_len, n)] for h in range(heads)
    ]
    return np.array([sum(row) / len(row) for row in picks])  # a NumPy array, one score per head


INDUCTION_SCORES = Exercise(
    name="induction_scores",
    reference=induction.induction_scores,
    cases=lambda seed: score_cases(seed, with_half_len=True),
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Query i in the second half holds the same token as position i - half_len. Which key holds the token that "
        "followed it last time? Average the weight on that key over the second-half queries.",
        "The keys i - half_len + 1 form a stripe half_len - 1 below the diagonal. Take that stripe and keep only the "
        "entries whose query is at least half_len (the stripe's first entry belongs to query half_len - 1); average "
        "over the batch and those queries, keeping the head axis.",
    ],
)
EXERCISES = {INDUCTION_SCORES.name: INDUCTION_SCORES}


def check_induction_scores(fn):
    """Check ``induction_scores(pattern, half_len)``, also on the trained toy model's patterns."""
    return INDUCTION_SCORES.check(fn)
