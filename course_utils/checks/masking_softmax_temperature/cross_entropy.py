"""Exercise ``cross_entropy(logits, targets)``: the mean of -ln softmax(logits)[target] over positions.

Required form (stated in the notebook): logits (n, d_vocab), targets (n,); natural logarithm (nats), the
mean over positions, stable for logits in the hundreds. Oracle: ``torch.nn.functional.cross_entropy``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.masking_softmax_temperature._shared import F64
from course_utils.checks.shared import WORKED_LOGITS, keyed_uniform


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Reference (the oracle): ``torch.nn.functional.cross_entropy``, the mean of -ln softmax(logits)[target]."""
    return torch.nn.functional.cross_entropy(logits, targets)


def _worked(seed: int) -> torch.Tensor:
    """The worked logits (1, 4); on hidden seeds each moved by up to ±0.5 (keyed by the grader's secret)."""
    logits = WORKED_LOGITS[None].double()
    return logits + keyed_uniform(seed, -0.5, 0.5, logits.shape) if seed else logits


def _cross_entropy_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    big = 400 * torch.randn(4, 7, generator=gen, dtype=F64)
    big[:, 2] = 1000.0  # e^1000 overflows even float64
    return [
        Case(
            "the worked example: CAT/DOG/IS/LOVELY logits, the next token is CAT",
            (_worked(seed), torch.tensor([0])),
        ),
        Case(
            "5 positions, 10 tokens",
            (torch.randn(5, 10, generator=gen, dtype=F64), torch.randint(0, 10, (5,), generator=gen)),
        ),
        Case("logits in the hundreds (a naive exp overflows)", (big, torch.randint(0, 7, (4,), generator=gen))),
        Case(
            "rows about 0, -2,000 and +500 (shift each row by its own maximum, not the whole tensor's)",
            (
                torch.randn(3, 6, generator=gen, dtype=F64) + torch.tensor([[0.0], [-2000.0], [500.0]], dtype=F64),
                torch.randint(0, 6, (3,), generator=gen),
            ),
        ),
    ]


def _stable_log_probs(logits):
    top = logits.amax(dim=-1, keepdim=True)
    return logits - top - (logits - top).exp().sum(dim=-1, keepdim=True).log()  # (n, d_vocab)


def _picked(log_probs, targets):
    return log_probs.gather(-1, targets[:, None]).squeeze(-1)  # (n,)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "log of the softmax of huge logits",
    "your result is inf or NaN for large logits: exp overflows. Use -ln p_t = log-sum-exp(logits) - logit_t, "
    "with the row maximum shifted out of the sum",
)
def ce_naive(logits, targets):
    probs = logits.exp() / logits.exp().sum(dim=-1, keepdim=True)
    return -_picked(probs.log(), targets).mean()


@bank.mistake("sum instead of mean", "the loss of a batch is the mean over its positions, not the sum")
def ce_sum(logits, targets):
    return -_picked(_stable_log_probs(logits), targets).sum()


@bank.mistake("no minus sign", "the loss is MINUS the log-probability (log-probabilities are negative, a loss is not)")
def ce_no_minus(logits, targets):
    return _picked(_stable_log_probs(logits), targets).mean()


@bank.mistake("log base 2", "use the natural logarithm (nats), as PyTorch does, not log base 2 (bits)")
def ce_log2(logits, targets):
    return -_picked(_stable_log_probs(logits), targets).mean() / math.log(2)


@bank.mistake(
    "softmax over positions",
    "the softmax runs over the vocabulary (the last axis, one distribution per position), not over positions",
)
def ce_wrong_dim(logits, targets):
    return -_picked(logits.log_softmax(dim=0), targets).mean()


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.logsumexp and indexing")
def _ce_logsumexp(logits, targets):
    return (torch.logsumexp(logits, dim=-1) - logits[torch.arange(len(targets)), targets]).mean()


@bank.alternative("nll_loss of log_softmax")
def _ce_nll(logits, targets):
    return F.nll_loss(F.log_softmax(logits, dim=-1), targets)


@bank.alternative("float32 loop returning a float")
def _ce_float32_loop(logits, targets):
    total = 0.0
    for row, t in zip(logits.float(), targets.tolist()):
        top = row.max()
        total += (top + (row - top).exp().sum().log() - row[t]).item()
    return total / len(targets)  # a Python float


@bank.alternative("the built-in")
def _ce_built_in(logits, targets):
    return F.cross_entropy(logits, targets)


CROSS_ENTROPY = Exercise(
    name="cross_entropy",
    reference=cross_entropy,
    cases=_cross_entropy_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "The loss of one position is minus the log of the probability the right token gets. Write that probability's "
        "log without ever computing a huge exponential.",
        "ln p_t = logit_t - ln(sum over j of e^logit_j). Compute the log of the sum stably by taking the row maximum m "
        "out: ln(sum e^z_j) = m + ln(sum e^(z_j - m)). Pick logit_t with gather (or indexing), then average over rows.",
    ],
)
EXERCISES = {CROSS_ENTROPY.name: CROSS_ENTROPY}


def check_cross_entropy(fn):
    """Check a student's ``cross_entropy(logits, targets)`` against ``torch.nn.functional.cross_entropy``."""
    return CROSS_ENTROPY.check(fn)
