"""Checks for notebook 05 (multi-head attention): splitting into heads, merging them back, a whole
``MultiHeadAttention`` module written from scratch (the student writes ``forward``; the check loads
the same seeded weights, in the (n_heads, d_model, d_head) layout, into the student's module and
into ``torch.nn.MultiheadAttention``, the oracle, and compares their outputs), and the
previous-token and induction scores of a head, checked on hand-built patterns, random ones and
the trained toy model's. Accepted alternatives and some mistakes live in ``_multihead_banks``."""

from __future__ import annotations

import functools
import math

import torch

from course_utils import induction, multihead
from course_utils.checks import _multihead_banks as banks
from course_utils.checks.core import Case, Exercise, Mistake
from course_utils.masking import causal_mask, padding_mask
from course_utils.softmax import masked_softmax

F64 = torch.float64


# -- split / merge ------------------------------------------------------------------------------
def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Reference: (batch, pos, d_model) -> (batch, head, pos, d_head), head h = columns h*d_head:(h+1)*d_head."""
    return multihead.split_heads(x, n_heads)


def merge_heads(z: torch.Tensor) -> torch.Tensor:
    """Reference: (batch, head, pos, d_head) -> (batch, pos, head * d_head)."""
    return multihead.merge_heads(z)


def _split_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("x of shape (2, 5, 12), 3 heads", (torch.randn(2, 5, 12, generator=gen, dtype=F64), 3)),
        Case("x of shape (1, 4, 8), 2 heads", (torch.randn(1, 4, 8, generator=gen, dtype=F64), 2)),
        Case("x of shape (3, 6, 16), 4 heads", (torch.randn(3, 6, 16, generator=gen, dtype=F64), 4)),
    ]


def _merge_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("z of shape (2, 3, 5, 4)", (torch.randn(2, 3, 5, 4, generator=gen, dtype=F64),)),
        Case("z of shape (1, 2, 4, 4)", (torch.randn(1, 2, 4, 4, generator=gen, dtype=F64),)),
    ]


def _split_by_reshape_only(x, n_heads):
    batch, pos, d_model = x.shape
    return x.reshape(batch, n_heads, pos, d_model // n_heads)


def _split_strided(x, n_heads):
    batch, pos, d_model = x.shape
    return x.reshape(batch, pos, d_model // n_heads, n_heads).permute(0, 3, 1, 2)


def _split_no_transpose(x, n_heads):
    batch, pos, d_model = x.shape
    return x.reshape(batch, pos, n_heads, d_model // n_heads)


SPLIT_HEADS = Exercise(
    name="split_heads",
    reference=split_heads,
    cases=_split_cases,
    mistakes=[
        Mistake(
            "reshape straight to heads",
            _split_by_reshape_only,
            "reshaping straight to (batch, head, pos, d_head) mixes positions into heads: "
            "reshape to (batch, pos, head, d_head), then transpose(1, 2)",
        ),
        Mistake(
            "strided columns",
            _split_strided,
            "head h owns a contiguous block of columns h*d_head:(h+1)*d_head, "
            "not every n_heads-th column: reshape to (batch, pos, n_heads, d_head)",
        ),
        Mistake(
            "no transpose",
            _split_no_transpose,
            "your result is (batch, pos, head, d_head): move the head axis before pos with transpose(1, 2)",
        ),
    ],
    alternatives=banks.SPLIT_ALTERNATIVES,
    hints=[
        "Two steps: first cut the last axis into (n_heads, d_head) without touching batch or pos, then move the head "
        "axis in front of the positions.",
        "A reshape that only splits the last axis into a heads axis and a d_head axis keeps each head's columns "
        "together; after it the head axis sits third, so swap it with the position axis.",
    ],
    tolerance="exact",
)


def _merge_by_reshape_only(z):
    batch, n_heads, pos, d_head = z.shape
    return z.reshape(batch, pos, n_heads * d_head)


def _merge_interleaved(z):
    batch, n_heads, pos, d_head = z.shape
    return z.permute(0, 2, 3, 1).reshape(batch, pos, n_heads * d_head)


MERGE_HEADS = Exercise(
    name="merge_heads",
    reference=merge_heads,
    cases=_merge_cases,
    mistakes=[
        Mistake(
            "reshape without transpose",
            _merge_by_reshape_only,
            "a plain reshape mixes positions across heads: "
            "first transpose(1, 2) to (batch, pos, head, d_head), then reshape",
        ),
        Mistake(
            "interleaved heads",
            _merge_interleaved,
            "the heads' outputs go side by side (head 0's d_head numbers, then head 1's...), not interleaved",
        ),
    ],
    alternatives=banks.MERGE_ALTERNATIVES,
    hints=[
        "Undo split_heads step by step, in the opposite order.",
        "Swap the head and position axes back to (batch, pos, n_heads, d_head), then join the last two axes into one "
        "of width n_heads * d_head.",
    ],
    tolerance="exact",
)


# -- the whole module, written from scratch ---------------------------------------------------------
def _module_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    lengths_mask = causal_mask(5) & padding_mask([5, 3], 5)  # (batch, q_pos, k_pos): a batch with padding
    return [
        Case(
            "d_model=12, 3 heads, causal mask, batch of 2",
            (12, 3, torch.randn(2, 5, 12, generator=gen, dtype=F64), causal_mask(5), seed),
        ),
        Case(
            "d_model=16, 4 heads, no mask", (16, 4, torch.randn(1, 6, 16, generator=gen, dtype=F64), None, seed + 100)
        ),
        Case(
            "d_model=8, 1 head, causal mask",
            (8, 1, torch.randn(2, 3, 8, generator=gen, dtype=F64), causal_mask(3), seed + 200),
        ),
        Case(
            "d_model=12, 2 heads, causal & padding mask of shape (batch, q_pos, k_pos)",
            (12, 2, torch.randn(2, 5, 12, generator=gen, dtype=F64), lengths_mask, seed + 300),
        ),
    ]


WEIGHT_NAMES = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")


def _load_weights(module, d_model: int, n_heads: int, seed: int) -> None:
    """Seeded weights in the (n_heads, d_model, d_head) layout, copied into the module's parameters."""
    d_head = d_model // n_heads
    gen = torch.Generator().manual_seed(seed)
    shapes = {
        "W_Q": (n_heads, d_model, d_head),
        "W_K": (n_heads, d_model, d_head),
        "W_V": (n_heads, d_model, d_head),
        "W_O": (n_heads, d_head, d_model),
        "b_Q": (n_heads, d_head),
        "b_K": (n_heads, d_head),
        "b_V": (n_heads, d_head),
        "b_O": (d_model,),
    }
    with torch.no_grad():
        for name in WEIGHT_NAMES:
            getattr(module, name).copy_(torch.randn(shapes[name], generator=gen, dtype=F64) / math.sqrt(d_model))


def _run_module(cls, case: Case):
    d_model, n_heads, x, mask, seed = case.args
    module = cls(d_model, n_heads).double()
    _load_weights(module, d_model, n_heads, seed)
    with torch.no_grad():
        return module(x, mask)


class TorchOracle(multihead.MultiHeadAttention):
    """The reference: ``torch.nn.MultiheadAttention`` holding the same weights (its mask is True = blocked)."""

    def forward(self, x, mask=None):
        torch_mha = multihead.to_torch_mha(self)
        torch_mask = None
        if mask is not None:  # torch wants (q, k) or (batch * n_heads, q, k), True = not allowed
            full = mask.expand(x.shape[0], x.shape[1], x.shape[1])  # (batch, q_pos, k_pos)
            torch_mask = (~full).repeat_interleave(self.n_heads, dim=0)  # (batch * head, q_pos, k_pos)
        out, _ = torch_mha(x, x, x, attn_mask=torch_mask, need_weights=False)
        return out


class _NoScaling(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return banks.attend(self, x, mask, 1.0)


class _ScalesByDModel(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return banks.attend(self, x, mask, 1 / math.sqrt(self.d_model))


class _IgnoresMask(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return banks.attend(self, x, mask, 1 / math.sqrt(self.d_head), mask_on=False)


class _InvertedMask(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        mask = None if mask is None else ~mask | torch.eye(x.shape[1], dtype=torch.bool)  # keep rows non-empty
        return banks.attend(self, x, mask, 1 / math.sqrt(self.d_head))


class _SoftmaxOverQueries(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        out = banks.attend(self, x, mask, 1 / math.sqrt(self.d_head), softmax_dim=-2)
        return torch.nan_to_num(out)


class _NoOutputBias(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return banks.attend(self, x, mask, 1 / math.sqrt(self.d_head), out_bias=False)


class _NoOutputProjection(multihead.MultiHeadAttention):
    def forward(self, x, mask=None):
        return multihead.merge_heads(self.head_outputs(x, mask))


MULTI_HEAD_ATTENTION = Exercise(
    name="multi_head_attention",
    reference=TorchOracle,
    cases=_module_cases,
    run=_run_module,
    wants_class=True,
    function_name="MultiHeadAttention",
    mistakes=[
        Mistake(
            "mask ignored",
            _IgnoresMask,
            "the mask was not applied: before the softmax, set the scores of the keys a query may not see to -inf",
        ),
        Mistake(
            "mask inverted",
            _InvertedMask,
            "your mask is the wrong way round: in this course True means 'may attend', "
            "so the False cells are the ones to block",
        ),
        Mistake("no 1/sqrt(d_head)", _NoScaling, "divide the scores q·k by sqrt(d_head) before the softmax"),
        Mistake(
            "1/sqrt(d_model)",
            _ScalesByDModel,
            "scale by sqrt(d_head), the width of one head's queries, not sqrt(d_model)",
        ),
        Mistake(
            "softmax over queries",
            _SoftmaxOverQueries,
            "the softmax runs over the keys (the last axis of the scores), so each query's weights sum to 1",
        ),
        Mistake(
            "no b_O", _NoOutputBias, "you left out the output bias b_O: add it once, after summing the heads' writes"
        ),
        Mistake(
            "no W_O",
            _NoOutputProjection,
            "each head's output z goes through its own W_O[h] back to d_model, and the heads' results are summed",
        ),
    ],
    alternatives=banks.MODULE_ALTERNATIVES,
    hints=[
        "Follow the shapes: x (batch, pos, d_model) and W_Q (n_heads, d_model, d_head) should give q of shape (batch, "
        "n_heads, pos, d_head); then it is notebook 03's attention with two leading axes; then back to d_model.",
        "torch.einsum with the letters b, p, m, h, d names every axis, e.g. batch-pos-model times head-model-dhead to "
        "batch-head-pos-dhead, plus the bias with a position axis inserted. Mask the scores "
        "with -inf where the mask is "
        "False (a 3-d mask needs a head axis), softmax over keys, mix the values, and sum the heads through W_O "
        "with another einsum; add b_O once.",
    ],
)

EXERCISES = {ex.name: ex for ex in (SPLIT_HEADS, MERGE_HEADS, MULTI_HEAD_ATTENTION)}


def check_split_heads(fn):
    """Check a student's ``split_heads(x, n_heads)``."""
    return SPLIT_HEADS.check(fn)


def check_merge_heads(fn):
    """Check a student's ``merge_heads(z)``."""
    return MERGE_HEADS.check(fn)


def check_multi_head_attention(cls):
    """Check a student's ``MultiHeadAttention`` class (its ``forward(x, mask=None)``)."""
    return MULTI_HEAD_ATTENTION.check(cls)


# -- head scores on the trained toy model ---------------------------------------------------------------
def _trained_model():
    """The toy model notebook 05 trains (default config, seed 0, CPU), shared with the notebook's run."""
    return induction.trained_induction_model(induction.InductionConfig(), seed=0)[0]


def _hand_built(n_ctx: int, half_len: int) -> torch.Tensor:
    """(1, 2, n, n): head 0 a perfect previous-token head, head 1 a perfect induction head (elsewhere: itself)."""
    pattern = torch.zeros(1, 2, n_ctx, n_ctx, dtype=F64)
    pattern[0, 0, 0, 0] = 1.0
    pattern[0, 0, torch.arange(1, n_ctx), torch.arange(n_ctx - 1)] = 1.0
    pattern[0, 1] = torch.eye(n_ctx, dtype=F64)
    for q in range(half_len, n_ctx):
        pattern[0, 1, q] = 0.0
        pattern[0, 1, q, q - half_len + 1] = 1.0
    return pattern


def _random_causal(seed: int, batch: int, heads: int, n_ctx: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    scores = 2 * torch.randn(batch, heads, n_ctx, n_ctx, generator=gen, dtype=F64)
    return masked_softmax(scores, causal_mask(n_ctx))  # (batch, head, q_pos, k_pos)


def _model_patterns(model, seed: int) -> list[torch.Tensor]:
    probe = induction.repeated_sequences(50, 10, model.cfg.d_vocab, torch.Generator().manual_seed(1000 + seed))
    device = model.W_E.device
    return [p.detach().cpu().double() for p in model.patterns(probe.to(device))]


@functools.lru_cache(maxsize=4)
def _default_patterns(seed: int) -> tuple[torch.Tensor, ...]:
    return tuple(_model_patterns(_trained_model(), seed))


def _score_cases(seed: int, with_half_len: bool = False) -> list[Case]:
    layer0, layer1 = _default_patterns(seed)
    raw = [
        ("random causal patterns, batch 3, 4 heads, 10 tokens, half_len 5", _random_causal(seed, 3, 4, 10), 5),
        ("hand-built: a previous-token head and an induction head, 12 tokens, half_len 6", _hand_built(12, 6), 6),
        ("the trained toy model's layer 0 on repeated sequences (half_len 10)", layer0, 10),
        ("the trained toy model's layer 1 on repeated sequences (half_len 10)", layer1, 10),
    ]
    return [Case(label, (pattern, half_len) if with_half_len else (pattern,)) for label, pattern, half_len in raw]


PREVIOUS_TOKEN_SCORES = Exercise(
    name="previous_token_scores",
    reference=induction.previous_token_scores,
    cases=_score_cases,
    mistakes=[
        Mistake(
            "the diagonal itself",
            banks.prev_self,
            "you measured attention to the query's own position: the previous "
            "token is one column to the LEFT of the diagonal (key = query - 1)",
        ),
        Mistake(
            "the next token",
            banks.prev_next,
            "you read the stripe above the diagonal (key = query + 1), which a causal "
            "pattern never attends to: the previous token is key = query - 1",
        ),
        Mistake(
            "divides by every query",
            banks.prev_all_queries,
            "query 0 has no previous token: average over queries 1 to "
            "the end only (n_ctx - 1 of them), not over all n_ctx",
        ),
        Mistake(
            "averaged over heads too",
            banks.prev_over_heads,
            "return one score per head, shape (head,): average over the batch and the queries, not over the heads",
        ),
    ],
    alternatives=banks.PREVIOUS_TOKEN_ALTERNATIVES,
    hints=[
        "For each query, how much weight goes to the key right before it? Collect those numbers, then average them.",
        "Those weights lie on the stripe just below the diagonal of the (q_pos, k_pos) table. Take that stripe "
        "(torch has a function for a diagonal with an offset, over chosen axes) and average over the batch and "
        "along the stripe, keeping the head axis.",
    ],
)

INDUCTION_SCORES = Exercise(
    name="induction_scores",
    reference=induction.induction_scores,
    cases=lambda seed: _score_cases(seed, with_half_len=True),
    mistakes=[
        Mistake(
            "the earlier copy itself",
            banks.ind_copy,
            "you measured attention to the earlier copy of the query's own "
            "token (key = query - half_len); an induction head looks at the token AFTER it, key = query - half_len + 1",
        ),
        Mistake(
            "first-half queries included",
            banks.ind_all_queries,
            "only queries in the repeat (query >= half_len) "
            "have an earlier copy: leave out the queries of the first half",
        ),
        Mistake(
            "one too far",
            banks.ind_too_far,
            "the token that came next last time is at key = query - half_len + 1, not query - half_len + 2",
        ),
        Mistake(
            "averaged over heads too",
            banks.ind_over_heads,
            "return one score per head, shape (head,): average over the batch and the queries, not over the heads",
        ),
    ],
    alternatives=banks.INDUCTION_ALTERNATIVES,
    hints=[
        "Query i in the second half holds the same token as position i - half_len. Which key holds the token that "
        "followed it last time? Average the weight on that key over the second-half queries.",
        "The keys i - half_len + 1 form a stripe half_len - 1 below the diagonal. Take that stripe and keep only the "
        "entries whose query is at least half_len (the stripe's first entry belongs to query half_len - 1); average "
        "over the batch and those queries, keeping the head axis.",
    ],
)

EXERCISES.update({ex.name: ex for ex in (PREVIOUS_TOKEN_SCORES, INDUCTION_SCORES)})


def check_previous_token_scores(fn):
    """Check ``previous_token_scores(pattern)``, also on the trained toy model's patterns."""
    return PREVIOUS_TOKEN_SCORES.check(fn)


def check_induction_scores(fn):
    """Check ``induction_scores(pattern, half_len)``, also on the trained toy model's patterns."""
    return INDUCTION_SCORES.check(fn)
