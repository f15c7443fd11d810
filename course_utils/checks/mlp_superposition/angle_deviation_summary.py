"""Exercise ``angle_deviation_summary(vectors)``: how far from perpendicular the pairs of a batch of vectors are.

Required form (stated in the notebook): vectors (n, d), rows not necessarily unit length; over every pair
i < j, the angle in degrees minus 90; return a tensor of two numbers, [RMS of the deviations, largest
|deviation|].
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from course_utils.superposition import geometry as superposition
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise

F64 = torch.float64


def angle_deviation_summary(vectors):
    """Reference: [RMS, max] of |angle − 90°| in degrees over all pairs i < j."""
    return superposition.angle_deviation_summary(vectors)


def _angle_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for n, d in ((40, 10), (25, 3), (60, 100)):
        v = torch.randn(n, d, generator=gen, dtype=F64)
        v = v * (0.5 + 3 * torch.rand(n, 1, generator=gen, dtype=F64))  # not unit length
        cases.append(Case(f"{n} vectors in {d} dimensions (not unit length)", (v,)))
    return cases


def _unit(v):
    return v / v.norm(dim=1, keepdim=True)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "diagonal included", "a vector paired with itself is 0° apart (90° off perpendicular): keep only pairs i < j"
)
def _angles_with_diagonal(v):
    dev = torch.rad2deg(torch.arccos((_unit(v) @ _unit(v).T).clamp(-1, 1))) - 90
    return torch.stack([dev.square().mean().sqrt(), dev.abs().max()])


@bank.mistake("not normalised", "a dot product is a cosine only for unit vectors: divide each row by its length first")
def _angles_unnormalised(v):
    i, j = torch.triu_indices(len(v), len(v), 1)
    dev = torch.rad2deg(torch.arccos((v @ v.T)[i, j])) - 90
    return torch.stack([dev.square().mean().sqrt(), dev.abs().max()])


@bank.mistake("radians", "report the deviations in degrees, not radians")
def _angles_radians(v):
    i, j = torch.triu_indices(len(v), len(v), 1)
    dev = torch.arccos((_unit(v) @ _unit(v).T)[i, j].clamp(-1, 1)) - math.pi / 2
    return torch.stack([dev.square().mean().sqrt(), dev.abs().max()])


@bank.mistake(
    "mean absolute",
    "the typical deviation asked for is the root-mean-square (square, average, square root), "
    "not the mean of |deviation|",
)
def _angles_mean_abs(v):
    i, j = torch.triu_indices(len(v), len(v), 1)
    dev = torch.rad2deg(torch.arccos((_unit(v) @ _unit(v).T)[i, j].clamp(-1, 1))) - 90
    return torch.stack([dev.abs().mean(), dev.abs().max()])


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("arcsin of the upper triangle")
def _angles_arcsin(v):
    cos = F.normalize(v, dim=1) @ F.normalize(v, dim=1).T
    dev = torch.rad2deg(torch.asin(cos[torch.ones_like(cos, dtype=torch.bool).triu(1)]))
    return torch.stack([dev.pow(2).mean().sqrt(), dev.abs().max()])


@bank.alternative("torch.pdist")
def _angles_pdist(v):
    d = torch.pdist(F.normalize(v, dim=1))  # |u - w|² = 2 - 2 cos, for every pair i < j
    dev = torch.rad2deg(torch.arccos((1 - d**2 / 2).clamp(-1, 1))) - 90
    return torch.stack([torch.sqrt(torch.mean(dev * dev)), torch.max(torch.abs(dev))])


@bank.alternative("float32 loop over pairs, NumPy result")
def _angles_loop_f32(v):
    u = _unit(v.float())
    devs = [
        math.degrees(math.acos(max(-1.0, min(1.0, float(u[i] @ u[j]))))) - 90
        for i in range(len(u))
        for j in range(i + 1, len(u))
    ]
    devs = np.array(devs)
    return np.array([np.sqrt(np.mean(devs**2)), np.abs(devs).max()])


ANGLE_DEVIATION_SUMMARY = Exercise(
    name="angle_deviation_summary",
    reference=angle_deviation_summary,
    cases=_angle_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "All cosines at once come from one matrix product of the normalised vectors with their transpose.",
        "Take each pair once (strictly above the diagonal), turn cosines into angles in degrees, "
        "subtract 90, then RMS and the largest absolute value.",
    ],
)
EXERCISES = {ANGLE_DEVIATION_SUMMARY.name: ANGLE_DEVIATION_SUMMARY}


def check_angle_deviation_summary(fn):
    """Check a student's ``angle_deviation_summary``."""
    return ANGLE_DEVIATION_SUMMARY.check(fn)
