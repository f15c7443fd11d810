"""Exercise ``importance_weighted_loss(x, x_hat, importance)``: the toy model's loss, one number per instance.

Required form (stated in the notebook): x and x_hat (batch, inst, feat), importance (inst, feat); for each
instance the mean over the batch of the sum over features of importance · (x − x̂)²; shape (inst,).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.superposition import toy_models
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise

F64 = torch.float64


def importance_weighted_loss(x, x_hat, importance):
    """Reference: per instance, mean over the batch of Σ_features importance · (x − x̂)²."""
    return toy_models.importance_weighted_loss(x, x_hat, importance)


def _loss_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for batch, inst, feat in ((8, 3, 5), (16, 2, 20), (5, 4, 6)):
        x = torch.rand(batch, inst, feat, generator=gen, dtype=F64)
        x_hat = torch.rand(batch, inst, feat, generator=gen, dtype=F64)
        importance = 0.5 + torch.rand(inst, feat, generator=gen, dtype=F64)
        cases.append(Case(f"batch {batch}, {inst} instances, {feat} features", (x, x_hat, importance)))
    return cases


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no importance", "weight each feature's squared error by its importance")
def _loss_no_importance(x, x_hat, importance):
    return (x - x_hat).square().sum(-1).mean(0)


@bank.mistake(
    "mean over features", "sum over features (each one's weighted error counts in full); average only over the batch"
)
def _loss_mean_features(x, x_hat, importance):
    return (importance * (x - x_hat) ** 2).mean(dim=(0, 2))


@bank.mistake(
    "importance inside the square", "multiply the squared error by the importance; don't square the importance too"
)
def _loss_importance_squared(x, x_hat, importance):
    return (importance * (x - x_hat)).square().sum(-1).mean(0)


@bank.mistake(
    "sum over the batch",
    "average over the batch (axis 0) rather than summing it, so the loss does not grow with batch size",
)
def _loss_sum_batch(x, x_hat, importance):
    return (importance * (x - x_hat) ** 2).sum(dim=(0, 2))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("einsum")
def _loss_einsum(x, x_hat, importance):
    diff = x - x_hat
    return torch.einsum("if,bif,bif->i", importance, diff, diff) / x.shape[0]


@bank.alternative("mean first, then weighted sum")
def _loss_reordered(x, x_hat, importance):
    return (importance * ((x - x_hat) ** 2).mean(0)).sum(-1)


@bank.alternative("float32 F.mse_loss per instance")
def _loss_f32_mse(x, x_hat, importance):
    w = importance.float().sqrt()
    return torch.stack(
        [
            F.mse_loss(w[i] * x[:, i].float(), w[i] * x_hat[:, i].float(), reduction="sum") / x.shape[0]
            for i in range(x.shape[1])
        ]
    )


IMPORTANCE_WEIGHTED_LOSS = Exercise(
    name="importance_weighted_loss",
    reference=importance_weighted_loss,
    cases=_loss_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "The result has one number per instance: which axes get summed, which averaged?",
        "importance · (x − x̂)², summed over the feature axis, then averaged over the batch axis.",
    ],
)
EXERCISES = {IMPORTANCE_WEIGHTED_LOSS.name: IMPORTANCE_WEIGHTED_LOSS}


def check_importance_weighted_loss(fn):
    """Check a student's ``importance_weighted_loss``."""
    return IMPORTANCE_WEIGHTED_LOSS.check(fn)
