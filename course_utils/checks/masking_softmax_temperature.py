"""Checks for notebook 04 (masking, softmax and temperature): a causal mask, a masked softmax that
never returns NaN, cross-entropy from logits (oracle: ``torch.nn.functional.cross_entropy``),
softmax with a temperature (T = 0 is greedy, ties to the first maximum), and top-k / top-p filtering.

Sampling is checked through the distribution a sampler would draw from, so every check is
deterministic. The accepted alternatives and the less central mistakes live in ``_masking_banks``.
"""

from __future__ import annotations

import torch

from course_utils import masking, sampling
from course_utils.checks import _masking_banks as banks
from course_utils.checks.core import Case, Exercise, Mistake, Property
from course_utils.softmax import masked_softmax, softmax

F64 = torch.float64
WORKED_LOGITS = torch.tensor([6.2, 4.9, 2.1, 1.0])  # CAT, DOG, IS, LOVELY


def _no_nan(case: Case, out) -> bool:
    return isinstance(out, torch.Tensor) and not torch.isnan(out).any()


def _rows_sum_to_one(case: Case, out) -> bool:
    return bool(torch.allclose(out.double().sum(-1), torch.ones((), dtype=F64), atol=1e-5))


# -- causal mask -------------------------------------------------------------------------------
def causal_mask(n_ctx: int) -> torch.Tensor:
    """Reference: (n_ctx, n_ctx) torch.bool, True where the key is at or before the query."""
    return masking.causal_mask(n_ctx)


def _mask_cases(seed: int) -> list[Case]:
    return [Case("n_ctx=4", (4 + seed,)), Case("n_ctx=1", (1,)), Case("n_ctx=6 (YOUR CAT IS A LOVELY CAT)", (6,))]


CAUSAL_MASK = Exercise(
    name="causal_mask",
    reference=causal_mask,
    cases=_mask_cases,
    mistakes=[
        Mistake(
            "0/1 floats",
            lambda n: torch.ones(n, n).tril(),
            "return a torch.bool mask (True = may attend), not 0/1 floats: ask for dtype=torch.bool when you build it",
        ),
        Mistake(
            "diagonal excluded",
            lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1),
            "a token may attend to itself: keep the diagonal (tril(), not tril(-1))",
        ),
        Mistake(
            "inverted",
            lambda n: torch.ones(n, n, dtype=torch.bool).triu(1),
            "your mask is inverted (True marks the blocked future keys): here True means *may attend*",
        ),
        Mistake(
            "upper triangle",
            lambda n: torch.ones(n, n, dtype=torch.bool).triu(),
            "rows are queries and columns keys: query i may see keys 0..i, the lower triangle (tril), not the upper",
        ),
    ],
    alternatives=banks.CAUSAL_MASK_ALTERNATIVES,
    hints=[
        "Row i is the query and column j the key. Which cells (i, j) may a token look at without seeing the future?",
        "Query i may see keys 0 to i, itself included: that is the lower triangle with its diagonal. Start from an "
        "n × n tensor of True values and keep only that triangle; torch has a function named after it.",
    ],
    tolerance="exact",
)


# -- masked softmax ----------------------------------------------------------------------------
def safe_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Reference: softmax over the allowed keys (mask True), zeros elsewhere, an all-zero row if none."""
    return masked_softmax(scores, mask)


def _masked_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    random_mask = torch.rand(2, 3, 5, generator=gen) > 0.5
    random_mask[0, 1] = False  # a query with nothing to attend to
    random_mask[1, 0] = True
    big = torch.tensor([[10_000.0, -10_000.0, 9_999.0], [3.0, 2.0, 1.0]], dtype=F64)
    return [
        Case("4×4 scores, causal mask", (torch.randn(4, 4, generator=gen, dtype=F64), masking.causal_mask(4))),
        Case(
            "(2, 3, 5) scores, a random mask with one fully masked row",
            (torch.randn(2, 3, 5, generator=gen, dtype=F64), random_mask),
        ),
        Case("scores of ±10,000", (big, torch.tensor([[True, True, False], [True, False, True]]))),
    ]


def _fill_inf_torch_softmax(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


MASKED_SOFTMAX = Exercise(
    name="safe_masked_softmax",
    reference=safe_masked_softmax,
    cases=_masked_cases,
    properties=[Property("no NaN", _no_nan, "your output contains NaN: a fully masked row must come back as zeros")],
    mistakes=[
        Mistake(
            "softmax then zero",
            lambda s, m: softmax(s) * m,
            "you zeroed the masked weights after the softmax without renormalising: "
            "mask the scores to -inf *before* the softmax",
        ),
        Mistake(
            "fill with 0",
            lambda s, m: softmax(s.masked_fill(~m, 0.0)),
            "masked scores were set to 0, which still gets weight e^0: set them to -inf",
        ),
        Mistake(
            "inverted",
            lambda s, m: masked_softmax(s, ~m),
            "your mask is inverted: True means the query *may* attend to that key",
        ),
        Mistake(
            "NaN on empty rows",
            _fill_inf_torch_softmax,
            "a row with every key masked gives 0/0 = NaN: "
            "return zeros for such rows (e.g. torch.where on mask.any(-1))",
        ),
        Mistake(
            "large negative instead of -inf, empty rows uniform",
            banks.masked_fill_large_negative,
            "filling blocked scores with a big negative number gives a fully masked row a uniform spread instead of "
            "zeros: such a row must come back as all zeros",
        ),
    ],
    alternatives=banks.MASKED_SOFTMAX_ALTERNATIVES,
    hints=[
        "Blocked keys must end with weight exactly 0 and the allowed ones must share all the weight. What score makes "
        "e^score zero? Then think about a row where every score is that value.",
        "Replace blocked scores by minus infinity, shift each row by its largest score (but use 0 as the shift "
        "where that largest score is minus infinity), exponentiate, and divide by the row total only where the total "
        "is positive; elsewhere return 0.",
    ],
)


# -- softmax with temperature ------------------------------------------------------------------
def softmax_with_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Reference: softmax(logits / T) over the last dim; T = 0 gives one-hot on the largest logit."""
    return sampling.next_token_distribution(logits, temperature)


def _temperature_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("CAT/DOG/IS/LOVELY logits at T=0.5", (WORKED_LOGITS.clone(), 0.5)),
        Case("3 rows of 10 logits at T=2", (torch.randn(3, 10, generator=gen, dtype=F64), 2.0)),
        Case("CAT/DOG/IS/LOVELY logits at T=0.01", (WORKED_LOGITS.clone(), 0.01)),
        Case("T=0 (greedy)", (torch.tensor([[1.0, 3.0, 2.0], [4.0, 0.5, 1.0]]), 0.0)),
        Case(
            "T=0 with tied largest logits (the first one wins)",
            (torch.tensor([[2.0, 5.0, 5.0, 1.0], [7.0, 7.0, 7.0, 0.0]]), 0.0),
        ),
    ]


def _times_temperature(logits, t):
    return softmax(logits * t) if t > 0 else sampling.greedy_distribution(logits)


def _no_shift(logits, t):
    if t == 0:
        return sampling.greedy_distribution(logits)
    exps = (logits / t).exp()
    return exps / exps.sum(dim=-1, keepdim=True)


TEMPERATURE = Exercise(
    name="softmax_with_temperature",
    reference=softmax_with_temperature,
    cases=_temperature_cases,
    properties=[
        Property("no NaN", _no_nan, "your output contains NaN: subtract the maximum, and treat T = 0 as greedy")
    ],
    mistakes=[
        Mistake(
            "multiplies by T",
            _times_temperature,
            "divide the logits by T (a small T must sharpen the distribution), don't multiply",
        ),
        Mistake(
            "no max shift",
            _no_shift,
            "exp(logits / T) overflows for small T (6.2 / 0.01 = 620): subtract the row maximum before exponentiating",
        ),
        Mistake(
            "divides by zero",
            lambda logits, t: softmax(logits / t),
            "T = 0 cannot be divided by: handle it as its own case, "
            "a one-hot distribution on the largest logit (greedy)",
        ),
        Mistake(
            "one-hot on every tied maximum",
            banks.greedy_all_ties,
            "with tied largest logits the rule is: the one-hot goes to the FIRST of them "
            "(lowest index, as torch.argmax picks), "
            "and the row still sums to 1",
        ),
        Mistake(
            "ties split evenly",
            banks.greedy_split_ties,
            "at T = 0 the answer is one-hot, even with ties: "
            "put all the weight on the first of the tied largest logits",
        ),
    ],
    alternatives=banks.TEMPERATURE_ALTERNATIVES,
    hints=[
        "Two separate cases: T = 0, where the formula cannot be used, "
        "and T > 0, where it can but e^(z/T) may overflow.",
        "For T > 0, subtract each row's largest logit before dividing by T, so every exponent is at most 0. For T = 0, "
        "build a row of zeros with a single 1 at the position of the largest logit (the first one if several tie).",
    ],
)


# -- top-k / top-p ------------------------------------------------------------------------------
def top_k_top_p_filter(probs: torch.Tensor, top_k: int | None, top_p: float | None) -> torch.Tensor:
    """Reference: keep the top_k most likely (if given), renormalise, then the top_p nucleus (if given), renormalise."""
    if top_k is not None:
        probs = sampling.top_k_filter(probs, top_k)
    if top_p is not None:
        probs = sampling.top_p_filter(probs, top_p)
    return probs


def _filter_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    worked = softmax(WORKED_LOGITS.double())
    return [
        Case("CAT/DOG/IS/LOVELY, top_k=2", (worked, 2, None)),
        Case("10 tokens, top_p=0.8", (softmax(2 * torch.randn(10, generator=gen, dtype=F64)), None, 0.8)),
        Case(
            "3 rows of 12 tokens, top_k=6 then top_p=0.7",
            (softmax(torch.randn(3, 12, generator=gen, dtype=F64)), 6, 0.7),
        ),
        Case("top token alone exceeds top_p=0.5", (worked, None, 0.5)),
    ]


def _no_renormalise(probs, top_k, top_p):
    keep = top_k_top_p_filter(probs, top_k, top_p) > 0
    return probs * keep


def _drops_crossing_token(probs, top_k, top_p):
    if top_k is not None:
        probs = sampling.top_k_filter(probs, top_k)
    if top_p is None:
        return probs
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    keep_sorted = sorted_probs.cumsum(-1) <= top_p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    kept = probs * keep
    return kept / kept.sum(-1, keepdim=True)


def _top_p_on_original(probs, top_k, top_p):
    keep = torch.ones_like(probs, dtype=torch.bool)
    if top_k is not None:
        keep &= sampling.top_k_filter(probs, top_k) > 0
    if top_p is not None:
        sorted_probs, order = (probs * keep).sort(dim=-1, descending=True)
        before = sorted_probs.cumsum(-1) - sorted_probs
        keep &= torch.zeros_like(keep).scatter(-1, order, before < top_p)
    kept = probs * keep
    return kept / kept.sum(-1, keepdim=True)


TOP_K_TOP_P = Exercise(
    name="top_k_top_p_filter",
    reference=top_k_top_p_filter,
    cases=_filter_cases,
    properties=[
        Property(
            "rows sum to 1", _rows_sum_to_one, "each row should sum to 1 after filtering: renormalise what you keep"
        )
    ],
    mistakes=[
        Mistake(
            "no renormalisation",
            _no_renormalise,
            "you zeroed the filtered tokens but did not renormalise: divide the kept probabilities by their sum",
        ),
        Mistake(
            "drops the crossing token",
            _drops_crossing_token,
            "top-p keeps the token that takes the total past p (keep a token while the mass *before* it is < p), "
            "so the top token always survives",
        ),
        Mistake(
            "top-p on the unrenormalised mass",
            _top_p_on_original,
            "after top-k, renormalise before applying top-p: p is a share of the mass that top-k left",
        ),
    ],
    alternatives=banks.TOP_K_TOP_P_ALTERNATIVES,
    hints=[
        "Do it in three steps: keep the k largest and renormalise; then, in descending order, keep tokens until the "
        "running total reaches p; renormalise again.",
        "For top-p, sort each row in descending order; the mass *before* a token is its running total minus itself. "
        "Keep the tokens whose mass before is below p, then put the keep flags back in the original order "
        "(scatter with the sort's indices).",
    ],
)


# -- cross-entropy ------------------------------------------------------------------------------
def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Reference (the oracle): ``torch.nn.functional.cross_entropy``, the mean of -ln softmax(logits)[target]."""
    return torch.nn.functional.cross_entropy(logits, targets)


def _cross_entropy_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    big = 400 * torch.randn(4, 7, generator=gen, dtype=F64)
    big[:, 2] = 1000.0  # e^1000 overflows even float64
    return [
        Case(
            "the worked example: CAT/DOG/IS/LOVELY logits, the next token is CAT",
            (WORKED_LOGITS[None].double(), torch.tensor([0])),
        ),
        Case(
            "5 positions, 10 tokens",
            (torch.randn(5, 10, generator=gen, dtype=F64), torch.randint(0, 10, (5,), generator=gen)),
        ),
        Case("logits in the hundreds (a naive exp overflows)", (big, torch.randint(0, 7, (4,), generator=gen))),
    ]


CROSS_ENTROPY = Exercise(
    name="cross_entropy",
    reference=cross_entropy,
    cases=_cross_entropy_cases,
    mistakes=[
        Mistake(
            "log of the softmax of huge logits",
            banks.ce_naive,
            "your result is inf or NaN for large logits: exp overflows. Use -ln p_t = log-sum-exp(logits) - logit_t, "
            "with the row maximum shifted out of the sum",
        ),
        Mistake("sum instead of mean", banks.ce_sum, "the loss of a batch is the mean over its positions, not the sum"),
        Mistake(
            "no minus sign",
            banks.ce_no_minus,
            "the loss is MINUS the log-probability (log-probabilities are negative, a loss is not)",
        ),
        Mistake(
            "log base 2", banks.ce_log2, "use the natural logarithm (nats), as PyTorch does, not log base 2 (bits)"
        ),
        Mistake(
            "softmax over positions",
            banks.ce_wrong_dim,
            "the softmax runs over the vocabulary (the last axis, one distribution per position), not over positions",
        ),
    ],
    alternatives=banks.CROSS_ENTROPY_ALTERNATIVES,
    hints=[
        "The loss of one position is minus the log of the probability the right token gets. Write that probability's "
        "log without ever computing a huge exponential.",
        "ln p_t = logit_t - ln(sum over j of e^logit_j). Compute the log of the sum stably by taking the row maximum m "
        "out: ln(sum e^z_j) = m + ln(sum e^(z_j - m)). Pick logit_t with gather (or indexing), then average over rows.",
    ],
)

EXERCISES = {ex.name: ex for ex in (CAUSAL_MASK, MASKED_SOFTMAX, CROSS_ENTROPY, TEMPERATURE, TOP_K_TOP_P)}


def check_causal_mask(fn):
    """Check a student's ``causal_mask(n_ctx)``."""
    return CAUSAL_MASK.check(fn)


def check_safe_masked_softmax(fn):
    """Check a student's ``safe_masked_softmax(scores, mask)``."""
    return MASKED_SOFTMAX.check(fn)


def check_cross_entropy(fn):
    """Check a student's ``cross_entropy(logits, targets)`` against ``torch.nn.functional.cross_entropy``."""
    return CROSS_ENTROPY.check(fn)


def check_softmax_with_temperature(fn):
    """Check a student's ``softmax_with_temperature(logits, temperature)``."""
    return TEMPERATURE.check(fn)


def check_top_k_top_p_filter(fn):
    """Check a student's ``top_k_top_p_filter(probs, top_k, top_p)``."""
    return TOP_K_TOP_P.check(fn)
