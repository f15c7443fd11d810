"""Exercise ``sae_training_step(sae, optimiser, h, l1)``: one optimisation step of a sparse autoencoder.

Required form (stated in the notebook): ``sae`` is a ``course_utils.superposition.sparse_autoencoder.SparseAutoencoder``
(calling it gives (acts, h_hat)), ``optimiser`` an optimiser over its parameters, h (batch, d_in), l1 a
number. Compute the loss of the batch (the ``sae_loss`` exercise), clear the old gradients, backpropagate,
step the optimiser, and return the loss (before the step). The check runs ``STEPS`` steps on the same
batch with Adam from the same seeded SAE as the reference, then compares the losses and every parameter.
Runs in the student's kernel when graded (the step changes the live module and optimiser).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.superposition import sparse_autoencoder
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.checks.mlp_superposition._sae import F64, sparse_activations
from course_utils.superposition.sparse_autoencoder import SparseAutoencoder

STEPS = 3


def sae_training_step(sae, optimiser, h, l1):
    """Reference: forward, loss, zero_grad, backward, step; returns the loss before the step."""
    return sparse_autoencoder.sae_training_step(sae, optimiser, h, l1)


def _step_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for batch, d_in, d_sae, l1, lr in ((32, 5, 20, 0.1, 0.01), (16, 3, 9, 0.5, 0.02)):
        sae = SparseAutoencoder(d_in, d_sae, seed=seed * 100 + d_sae).to(F64)
        with torch.no_grad():
            sae.b_dec.copy_(torch.randn(d_in, generator=gen, dtype=F64) * 0.3)  # so that centring on it matters
            sae.W_dec.mul_(0.5 + torch.rand(d_sae, 1, generator=gen, dtype=F64))  # rows of unequal length
        optimiser = torch.optim.Adam(sae.parameters(), lr=lr)
        h = sparse_activations(gen, batch, d_in, 2 * d_in)
        label = f"{STEPS} Adam steps (lr={lr}) on {batch} inputs of width {d_in}, {d_sae} latents, l1={l1}"
        cases.append(Case(label, (sae, optimiser, h, l1)))
    return cases


def _as_number(loss) -> float:
    if isinstance(loss, torch.Tensor) and loss.numel() == 1:
        return float(loss.detach().reshape(()))
    return float(loss) if isinstance(loss, (int, float)) and not isinstance(loss, bool) else math.nan


def _run_steps(impl, case: Case):
    """(the STEPS returned losses, {name: parameter after the last step})."""
    sae, optimiser, h, l1 = case.args
    losses = torch.tensor([_as_number(impl(sae, optimiser, h, l1)) for _ in range(STEPS)], dtype=F64)
    return losses, {name: p.detach().clone() for name, p in sae.named_parameters()}


def _returns_losses(case: Case, out) -> bool:
    return not torch.isnan(out[0]).any()


bank = Bank()


def _loss(h, acts, h_hat, l1):
    return sparse_autoencoder.sae_loss(h, acts, h_hat, l1)


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "gradients never cleared",
    "clear the old gradients every step, before the backward pass: otherwise each step's gradients are added "
    "to the previous ones",
)
def _no_zero_grad(sae, optimiser, h, l1):
    loss = _loss(h, *sae(h), l1)
    loss.backward()
    optimiser.step()
    return loss.detach()


@bank.mistake(
    "gradients cleared after backward",
    "the parameters never moved: clear the gradients before the backward pass, not between it and the "
    "optimiser's step (which then finds no gradient)",
)
def _zero_grad_too_late(sae, optimiser, h, l1):
    loss = _loss(h, *sae(h), l1)
    loss.backward()
    optimiser.zero_grad()
    optimiser.step()
    return loss.detach()


@bank.mistake(
    "no sparsity penalty", "the step minimises the whole loss: reconstruction error plus l1 times the latents' sum"
)
def _reconstruction_only(sae, optimiser, h, l1):
    loss = (h - sae(h)[1]).square().sum(dim=-1).mean()
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
    return loss.detach()


@bank.mistake(
    "L1 on the reconstruction", "the L1 penalty is on the latents (the first output of sae(h)), not on h_hat"
)
def _l1_on_reconstruction(sae, optimiser, h, l1):
    acts, h_hat = sae(h)
    loss = (h - h_hat).square().sum(dim=-1).mean() + l1 * h_hat.abs().sum(dim=-1).mean()
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
    return loss.detach()


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("its own forward, F.mse_loss, returns a float")
def _alt_own_forward(sae, optimiser, h, l1):
    acts = F.relu((h - sae.b_dec) @ sae.W_enc + sae.b_enc)
    h_hat = acts @ F.normalize(sae.W_dec, dim=-1) + sae.b_dec
    loss = (F.mse_loss(h_hat, h, reduction="sum") + l1 * acts.abs().sum()) / h.shape[0]
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
    return loss.item()


@bank.alternative("grads set to None by hand, encode and directions")
def _alt_by_hand(sae, optimiser, h, l1):
    for p in sae.parameters():
        p.grad = None
    acts = sae.encode(h)
    h_hat = acts @ sae.directions() + sae.b_dec
    loss = torch.linalg.vector_norm(h - h_hat, dim=-1).square().mean() + l1 * acts.sum(-1).mean()
    loss.backward()
    optimiser.step()
    return loss


@bank.alternative("torch.autograd.grad, zero_grad(set_to_none=False)")
def _alt_autograd_grad(sae, optimiser, h, l1):
    optimiser.zero_grad(set_to_none=False)
    acts, h_hat = sae(h)
    loss = ((h - h_hat) ** 2).sum(-1).mean() + l1 * acts.sum(-1).mean()
    params = list(sae.parameters())
    for p, g in zip(params, torch.autograd.grad(loss, params)):
        p.grad = g
    optimiser.step()
    return loss.detach()


SAE_TRAINING_STEP = Exercise(
    name="sae_training_step",
    reference=sae_training_step,
    cases=_step_cases,
    run=_run_steps,
    run_in_kernel=True,  # the step changes the student's live module and optimiser
    properties=[
        Property("returns the loss", _returns_losses, "return the batch's loss (one number), computed before the step")
    ],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "The usual four moves of a PyTorch step: a forward pass and its loss, clear the gradients, backward, "
        "step. Return the loss.",
        "Call the SAE on the batch for the latents and the reconstruction, build the loss as in sae_loss, then "
        "clear the optimiser's gradients, call backward on the loss and step the optimiser, in that order. "
        "Return the loss detached from the graph (or as a Python float).",
    ],
    tolerance="loose",  # three Adam steps: a chain of float operations
)
EXERCISES = {SAE_TRAINING_STEP.name: SAE_TRAINING_STEP}


def check_sae_training_step(fn):
    """Check a student's ``sae_training_step(sae, optimiser, h, l1)``."""
    return SAE_TRAINING_STEP.check(fn)
