"""Exercise ``top_k_top_p_filter(probs, top_k, top_p)``: keep the likeliest tokens, then renormalise.

Required form (stated in the notebook): top-k first (if ``top_k`` is given) and renormalise, then the top-p
nucleus (if ``top_p`` is given: keep a token while the mass BEFORE it is < p, so the top token always stays)
and renormalise again; each row sums to 1.
"""

from __future__ import annotations

import torch

from course_utils import sampling
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.checks.masking_softmax_temperature._shared import F64
from course_utils.checks.shared import WORKED_LOGITS, keyed_uniform, rows_sum_to_one
from course_utils.softmax import softmax


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
    if seed:  # hidden: the worked logits moved by up to ±0.4 (keyed by the grader's secret): CAT stays above 0.5
        worked = softmax(WORKED_LOGITS.double() + keyed_uniform(seed, -0.4, 0.4, (4,)))
    return [
        Case("CAT/DOG/IS/LOVELY, top_k=2", (worked, 2, None)),
        Case("10 tokens, top_p=0.8", (softmax(2 * torch.randn(10, generator=gen, dtype=F64)), None, 0.8)),
        Case(
            "3 rows of 12 tokens, top_k=6 then top_p=0.7",
            (softmax(torch.randn(3, 12, generator=gen, dtype=F64)), 6, 0.7),
        ),
        Case("top token alone exceeds top_p=0.5", (worked, None, 0.5)),
        _crossing_case(gen),
    ]


def _crossing_case(gen: torch.Generator) -> Case:
    """6 tokens and a p halfway through the third likeliest's mass: the mass before it is below p (it stays), the
    mass before the fourth above (it goes). No exact tie at p, which float rounding would decide either way."""
    probs = softmax(torch.randn(6, generator=gen, dtype=F64))
    running = probs.sort(descending=True).values.cumsum(0)
    top_p = float(running[1] + running[2]) / 2
    return Case("6 tokens, top_p halfway through the third likeliest's mass: it stays, the fourth goes",
                (probs, None, top_p))


def _renormalise(p):
    return p / p.sum(dim=-1, keepdim=True)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "no renormalisation",
    "you zeroed the filtered tokens but did not renormalise: divide the kept probabilities by their sum",
)
def _no_renormalise(probs, top_k, top_p):
    keep = top_k_top_p_filter(probs, top_k, top_p) > 0
    return probs * keep


@bank.mistake(
    "drops the crossing token",
    "top-p keeps the token that takes the total past p (keep a token while the mass *before* it is < p), "
    "so the top token always survives",
)
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


@bank.mistake(
    "top-p on the unrenormalised mass",
    "after top-k, renormalise before applying top-p: p is a share of the mass that top-k left",
)
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


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.topk and scatter")
def _topk_scatter(probs, top_k, top_p):
    if top_k is not None:
        keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, probs.topk(top_k, dim=-1).indices, True)
        probs = _renormalise(probs * keep)
    if top_p is not None:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        keep_sorted = (sorted_probs.cumsum(dim=-1) - sorted_probs) < top_p
        probs = _renormalise(probs * torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted))
    return probs


@bank.alternative("k-th value threshold, ascending top-p")
def _threshold_and_ascending(probs, top_k, top_p):
    """Top-k by the k-th largest value; top-p the Hugging Face way (ascending, drop the bottom 1 - p)."""
    if top_k is not None:
        kth = probs.topk(top_k, dim=-1).values[..., -1:]
        probs = _renormalise(torch.where(probs >= kth, probs, 0.0))
    if top_p is not None:
        ascending, order = probs.sort(dim=-1)
        drop_sorted = ascending.cumsum(dim=-1) <= 1 - top_p
        drop_sorted[..., -1] = False  # the top token always stays
        probs = _renormalise(probs.masked_fill(torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted), 0.0))
    return probs


@bank.alternative("float32 Python loops")
def _float32_loops(probs, top_k, top_p):
    rows = probs.float().reshape(-1, probs.shape[-1])
    out = torch.zeros_like(rows)
    for r, row in enumerate(rows):
        order = sorted(range(len(row)), key=lambda i: -row[i].item())
        kept = order[:top_k] if top_k is not None else order
        total = sum(row[i].item() for i in kept)
        if top_p is not None:
            running, nucleus = 0.0, []
            for i in kept:
                if running < top_p:
                    nucleus.append(i)
                running += row[i].item() / total
            kept = nucleus
        for i in kept:
            out[r, i] = row[i]
        out[r] /= out[r].sum()
    return out.reshape(probs.shape)


@bank.alternative("top-p in log space (logcumsumexp), top-k by rank")
def _log_space(probs, top_k, top_p):
    """Goes through logarithms, so the mass before a token is right to rounding, not to the bit."""
    if top_k is not None:
        rank = probs.argsort(dim=-1, descending=True).argsort(dim=-1)
        probs = _renormalise(probs * (rank < top_k))
    if top_p is not None:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        log_total = torch.logcumsumexp(sorted_probs.log(), dim=-1)  # log of the mass up to and with each token
        before = torch.cat([torch.zeros_like(log_total[..., :1]), log_total[..., :-1].exp()], dim=-1)
        probs = _renormalise(probs * torch.zeros_like(before, dtype=torch.bool).scatter(-1, order, before < top_p))
    return probs


TOP_K_TOP_P = Exercise(
    name="top_k_top_p_filter",
    reference=top_k_top_p_filter,
    cases=_filter_cases,
    properties=[
        Property(
            "rows sum to 1", rows_sum_to_one, "each row should sum to 1 after filtering: renormalise what you keep"
        )
    ],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Do it in three steps: keep the k largest and renormalise; then, in descending order, keep tokens until the "
        "running total reaches p; renormalise again.",
        "For top-p, sort each row in descending order; the mass *before* a token is its running total minus itself. "
        "Keep the tokens whose mass before is below p, then put the keep flags back in the original order "
        "(scatter with the sort's indices).",
    ],
)
EXERCISES = {TOP_K_TOP_P.name: TOP_K_TOP_P}


def check_top_k_top_p_filter(fn):
    """Check a student's ``top_k_top_p_filter(probs, top_k, top_p)``."""
    return TOP_K_TOP_P.check(fn)
