"""Exercise ``sae_metrics(h, latents, h_hat)``: how good a sparse autoencoder is, in four numbers.

Required form (stated in the notebook): ``h`` (n, d) are the activations, ``latents`` (n, d_sae) the SAE's latent
activations on them (>= 0) and ``h_hat`` (n, d) its reconstructions. Returns a dict of four numbers:
``"l0"``, the mean over rows of the number of latents > 0; ``"variance_explained"``,
1 - Σ‖h - ĥ‖² / Σ‖h - mean(h)‖² (the mean over rows, per feature); ``"dead_fraction"``, the fraction of latents
that are > 0 on no row; ``"norm_ratio"``, the mean over rows of ‖ĥ‖ / ‖h‖. Checked against the formulas of
``course_utils.superposition.sae_diagnostics`` and ``course_utils.interp.sae_report``.
"""

from __future__ import annotations

import numpy as np
import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise

F64 = torch.float64


def sae_metrics(h, latents, h_hat):
    """Reference: L0, variance explained, dead fraction and mean norm ratio."""
    active = latents > 0
    return {
        "l0": float(active.sum(-1).double().mean()),
        "variance_explained": float(1 - (h - h_hat).square().sum() / (h - h.mean(0)).square().sum()),
        "dead_fraction": float((~active.any(0)).double().mean()),
        "norm_ratio": float((h_hat.norm(dim=-1) / h.norm(dim=-1)).mean()),
    }


def _metric_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(600 + seed)
    found = []
    for n, d, d_sae, n_dead in ((40, 8, 24, 3), (64, 12, 48, 0), (30, 6, 20, 7)):
        h = torch.randn(n, d, generator=gen, dtype=F64) + 1.5  # activations with a mean, like a GELU's
        pre = torch.randn(n, d_sae, generator=gen, dtype=F64) - 1.0
        pre[:, :n_dead] = -1.0  # these latents never fire
        latents = pre.clamp_min(0)
        W_dec = 0.3 * torch.randn(d_sae, d, generator=gen, dtype=F64)
        h_hat = 0.8 * h + latents @ W_dec  # a shrunk reconstruction plus some error
        found.append(Case(f"{n} rows, d {d}, {d_sae} latents ({n_dead} never fire)", (h, latents, h_hat)))
    return found


bank = Bank()


def _with(h, latents, h_hat, **changes):
    found = sae_metrics(h, latents, h_hat)
    found.update(changes)
    return found


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("variance about zero", "variance is measured about the mean: the denominator is Σ‖h - mean(h)‖², the "
              "error of predicting every row by the mean row, not Σ‖h‖²")
def _about_zero(h, latents, h_hat):
    return _with(h, latents, h_hat, variance_explained=float(1 - (h - h_hat).square().sum() / h.square().sum()))


@bank.mistake("L0 as a fraction", "L0 counts the active latents per row (a number like 20), it is not divided by "
              "the number of latents")
def _l0_fraction(h, latents, h_hat):
    return _with(h, latents, h_hat, l0=float((latents > 0).double().mean()))


@bank.mistake("dead counted, not a fraction", "dead_fraction is the dead latents divided by the number of latents")
def _dead_count(h, latents, h_hat):
    return _with(h, latents, h_hat, dead_fraction=float((~(latents > 0).any(0)).sum()))


@bank.mistake("ratio of the mean norms", "norm_ratio is the mean over rows of each row's ratio ‖ĥ‖ / ‖h‖, not one "
              "ratio of two means")
def _ratio_of_means(h, latents, h_hat):
    return _with(h, latents, h_hat, norm_ratio=float(h_hat.norm(dim=-1).mean() / h.norm(dim=-1).mean()))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("NumPy")
def _numpy(h, latents, h_hat):
    h, z, r = h.numpy(), latents.numpy(), h_hat.numpy()
    return {
        "l0": float((z > 0).sum(1).mean()),
        "variance_explained": float(1 - ((h - r) ** 2).sum() / ((h - h.mean(0)) ** 2).sum()),
        "dead_fraction": float((z > 0).any(0).__invert__().mean()),
        "norm_ratio": float((np.linalg.norm(r, axis=1) / np.linalg.norm(h, axis=1)).mean()),
    }


@bank.alternative("count_nonzero, variances per feature, float32, 0-d tensors")
def _torch32(h, latents, h_hat):
    h, latents, h_hat = h.float(), latents.float(), h_hat.float()
    n = h.shape[0]
    return {
        "l0": torch.count_nonzero(latents, dim=-1).float().mean(),
        "variance_explained": 1 - (h - h_hat).pow(2).sum() / (h.var(0, unbiased=False).sum() * n),
        "dead_fraction": (latents.amax(0) <= 0).float().mean(),
        "norm_ratio": (torch.linalg.vector_norm(h_hat, dim=1) / torch.linalg.vector_norm(h, dim=1)).mean(),
    }


@bank.alternative("loops over rows and latents")
def _loops(h, latents, h_hat):
    rows, d_sae = latents.shape
    active = [sum(1 for v in row.tolist() if v > 0) for row in latents]
    dead = sum(1 for j in range(d_sae) if not bool((latents[:, j] > 0).any()))
    mean = h.mean(0)
    error = sum(float((a - b).square().sum()) for a, b in zip(h, h_hat))
    spread = sum(float((a - mean).square().sum()) for a in h)
    ratios = [float(b.norm() / a.norm()) for a, b in zip(h, h_hat)]
    return {"l0": sum(active) / rows, "variance_explained": 1 - error / spread, "dead_fraction": dead / d_sae,
            "norm_ratio": sum(ratios) / rows}


SAE_METRICS = Exercise(
    name="sae_metrics",
    reference=sae_metrics,
    cases=_metric_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Each number is one line of tensor code. 'Active' means a latent's value is above zero; L0 and dead latents "
        "both come from that one boolean table, one summed along the latents, the other asked along the rows.",
        "Variance explained compares the reconstruction's squared error with the error of the best constant guess, "
        "the mean row. Norm ratio: one ratio per row (torch.linalg.vector_norm along the last axis), then the mean.",
    ],
)
EXERCISES = {SAE_METRICS.name: SAE_METRICS}


def check_sae_metrics(fn):
    """Check a student's ``sae_metrics(h, latents, h_hat)``."""
    return SAE_METRICS.check(fn)
