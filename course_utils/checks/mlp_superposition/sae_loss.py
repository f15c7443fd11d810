"""Exercise ``sae_loss(h, acts, h_hat, l1)``: a sparse autoencoder's training loss.

Required form (stated in the notebook): h and h_hat (batch, d_in), acts (batch, d_sae), l1 a number;
return the mean over the batch of ‖h − h_hat‖² (summed over d_in) + l1 · ‖acts‖₁ (summed over
d_sae), one number.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.superposition import sparse_autoencoder
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mlp_superposition._sae import F64, sae_weights, sparse_activations


def sae_loss(h, acts, h_hat, l1):
    """Reference: mean over the batch of ‖h − h_hat‖² + l1 · Σ acts."""
    return sparse_autoencoder.sae_loss(h, acts, h_hat, l1)


def _loss_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for batch, d_in, d_sae, l1 in ((16, 5, 40, 0.1), (10, 3, 12, 1.0), (32, 4, 9, 0.03)):
        h = sparse_activations(gen, batch, d_in, 2 * d_in)
        acts, h_hat = sparse_autoencoder.sae_forward(h, *sae_weights(gen, d_in, d_sae))  # a real SAE's output
        h_hat = h_hat + 0.1 * torch.randn(batch, d_in, generator=gen, dtype=F64)
        cases.append(Case(f"{batch} inputs of width {d_in}, {d_sae} latents, l1={l1}", (h, acts, h_hat, l1)))
    return cases


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("L1 on the reconstruction", "the L1 penalty is on the latents acts, not on the reconstruction h_hat")
def _l1_on_reconstruction(h, acts, h_hat, l1):
    return (h - h_hat).square().sum(dim=-1).mean() + l1 * h_hat.abs().sum(dim=-1).mean()


@bank.mistake(
    "means over every element",
    "sum over each input's dimensions (the squared length of its error, the L1 norm of its latents), "
    "then average over the batch: a mean over every element divides by d_in and d_sae too",
)
def _means_everywhere(h, acts, h_hat, l1):
    return F.mse_loss(h_hat, h) + l1 * acts.mean()


@bank.mistake("L2 penalty", "the sparsity penalty is the L1 norm (the sum of the latents), not a sum of squares")
def _l2_penalty(h, acts, h_hat, l1):
    return (h - h_hat).square().sum(dim=-1).mean() + l1 * acts.square().sum(dim=-1).mean()


@bank.mistake("summed over the batch", "average over the batch instead of summing, so the loss does not grow with it")
def _batch_sum(h, acts, h_hat, l1):
    return (h - h_hat).square().sum() + l1 * acts.sum()


@bank.mistake("l1 on the whole loss", "l1 multiplies only the sparsity penalty, not the reconstruction error")
def _l1_on_everything(h, acts, h_hat, l1):
    return l1 * ((h - h_hat).square().sum(dim=-1) + acts.sum(dim=-1)).mean()


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.mse_loss with reduction='sum', divided by the batch")
def _alt_mse_sum(h, acts, h_hat, l1):
    return (F.mse_loss(h_hat, h, reduction="sum") + l1 * acts.abs().sum()) / h.shape[0]


@bank.alternative("vector norms")
def _alt_norms(h, acts, h_hat, l1):
    error = torch.linalg.vector_norm(h - h_hat, dim=-1).square()  # (batch,)
    return (error + l1 * torch.linalg.vector_norm(acts, ord=1, dim=-1)).mean()


@bank.alternative("float32 einsum, returned as a Python float")
def _alt_float32_float(h, acts, h_hat, l1):
    diff = (h - h_hat).float()
    return (torch.einsum("bi,bi->", diff, diff) / h.shape[0] + l1 * acts.float().sum(-1).mean()).item()


SAE_LOSS = Exercise(
    name="sae_loss",
    reference=sae_loss,
    cases=_loss_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two terms, each one number per input, then averaged over the batch: how far the reconstruction is "
        "from the input, and how much the latents add up to, weighted by l1.",
        "Square the error and sum it over the last dimension; sum the latents over the last dimension (they "
        "are non-negative, so that is their L1 norm); combine with l1 and take .mean() over the batch.",
    ],
)
EXERCISES = {SAE_LOSS.name: SAE_LOSS}


def check_sae_loss(fn):
    """Check a student's ``sae_loss(h, acts, h_hat, l1)``."""
    return SAE_LOSS.check(fn)
