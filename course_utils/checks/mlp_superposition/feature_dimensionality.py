"""Exercise ``feature_dimensionality(W)``: how much of a dimension each feature of a toy model gets.

Required form (stated in the notebook): D_i = ‖W_i‖² / Σ_j (Ŵ_i · W_j)², the sum over all j including i,
for W of shape (..., hidden, feat) whose columns are the features (any leading instance axes); return
shape (..., feat).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.superposition import toy_models
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise

F64 = torch.float64


def feature_dimensionality(W):
    """Reference: D_i = ‖W_i‖² / Σ_j (Ŵ_i · W_j)² for W of shape (..., hidden, feat)."""
    return toy_models.feature_dimensionality(W)


def _dim_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    angles = torch.arange(5, dtype=F64) * 2 * math.pi / 5 + seed
    pentagon = torch.stack([angles.cos(), angles.sin()]) * (0.5 + torch.rand(5, generator=gen, dtype=F64))
    return [
        Case("a pentagon with uneven lengths (hidden 2, feat 5)", (pentagon,)),
        Case("random W of shape (hidden 3, feat 8)", (torch.randn(3, 8, generator=gen, dtype=F64),)),
        Case(
            "W with two leading axes, shape (2, 3, hidden 5, feat 12)",
            (torch.randn(2, 3, 5, 12, generator=gen, dtype=F64),),
        ),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("norm not squared", "the numerator is the squared length ‖W_i‖², not ‖W_i‖")
def _dim_norm_not_squared(W):
    norms = W.norm(dim=-2, keepdim=True)
    return norms.squeeze(-2) / ((W / norms).transpose(-1, -2) @ W).square().sum(-1)


@bank.mistake("self left out", "the sum over j includes j = i (a feature alone in its direction then gets exactly 1)")
def _dim_excludes_self(W):
    norms = W.norm(dim=-2, keepdim=True)
    overlaps = ((W / norms).transpose(-1, -2) @ W).square()
    return norms.squeeze(-2) ** 2 / (overlaps.sum(-1) - overlaps.diagonal(dim1=-2, dim2=-1))


@bank.mistake("both normalised", "normalise only W_i in the dot product: Ŵ_i · W_j keeps W_j's length")
def _dim_both_normalised(W):
    unit = W / W.norm(dim=-2, keepdim=True)
    return W.norm(dim=-2) ** 2 / (unit.transpose(-1, -2) @ unit).square().sum(-1)


@bank.mistake(
    "per hidden unit", "features are the columns of W (last axis); you computed one number per hidden unit (rows)"
)
def _dim_wrong_axis(W):
    norms = W.norm(dim=-1, keepdim=True)  # per hidden unit, not per feature
    return norms.squeeze(-1) ** 2 / ((W / norms) @ W.transpose(-1, -2)).square().sum(-1)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("‖W_i‖⁴ / Σ (W_i·W_j)²")
def _dim_quartic(W):
    norms = torch.linalg.vector_norm(W, dim=-2)
    return norms**4 / (W.transpose(-1, -2) @ W).pow(2).sum(-1)


@bank.alternative("einsum")
def _dim_einsum(W):
    unit = F.normalize(W, dim=-2)
    dots = torch.einsum("...hi,...hj->...ij", unit, W)
    return torch.einsum("...hi,...hi->...i", W, W) / torch.einsum("...ij,...ij->...i", dots, dots)


@bank.alternative("float32 double loop")
def _dim_loop_f32(W):
    flat = W.float().reshape(-1, *W.shape[-2:])  # (inst, hidden, feat)
    out = torch.empty(flat.shape[0], flat.shape[-1])
    for k, w in enumerate(flat):
        for i in range(w.shape[1]):
            wi = w[:, i]
            out[k, i] = wi.dot(wi) / sum(float(wi.dot(w[:, j]) / wi.norm()) ** 2 for j in range(w.shape[1]))
    return out.reshape(W.shape[:-2] + W.shape[-1:])


FEATURE_DIMENSIONALITY = Exercise(
    name="feature_dimensionality",
    reference=feature_dimensionality,
    cases=_dim_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Work feature by feature: how long is W_i, "
        "and how much do all the features (itself included) project onto its direction?",
        "Numerator ‖W_i‖²; denominator the sum over every j of (unit vector of W_i · W_j) squared. "
        "WᵀW-style products give all the dot products at once.",
    ],
)
EXERCISES = {FEATURE_DIMENSIONALITY.name: FEATURE_DIMENSIONALITY}


def check_feature_dimensionality(fn):
    """Check a student's ``feature_dimensionality``."""
    return FEATURE_DIMENSIONALITY.check(fn)
