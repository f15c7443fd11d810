"""Exercise ``welch_bound(n, d)``: the smallest possible largest |cos θ| among n unit vectors in d dimensions.

Required form (stated in the notebook): a float, sqrt((n − d) / (d (n − 1))) when n > d and 0 when n ≤ d,
for integers n >= 2, d >= 1.
"""

from __future__ import annotations

import random
import math

import numpy as np
import torch

from course_utils.superposition import geometry as superposition
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise


def welch_bound(n, d):
    """Reference: sqrt((n − d) / (d (n − 1))) when n > d, else 0."""
    return superposition.welch_bound(n, d)


def _welch_cases(seed: int) -> list[Case]:
    pairs = [(3, 2), (4000, 100), (5, 10), (1000 + 97 * seed, 50 + seed), (7 + seed, 7 + seed), (10**6, 12288)]
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        small, d, square, big = rng.randint(2, 9), rng.randint(11, 200), rng.randint(2, 60), rng.randint(1000, 20000)
        pairs = [(small + 1, small), (rng.randint(2000, 9000), rng.randint(20, 300)), (rng.randint(2, 10), d),
                 (rng.randint(500, 5000), rng.randint(10, 99)), (square, square), (big * 100, big)]
    return [Case(f"n={n}, d={d}", (n, d)) for n, d in pairs]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no square root", "the bound is on |cos θ| itself: take the square root of the fraction")
def _welch_no_sqrt(n, d):
    return max(0.0, (n - d) / (d * (n - 1)))


@bank.mistake("n and d swapped", "the denominator is d · (n − 1): dimensions times (vectors minus one)")
def _welch_swapped(n, d):
    return math.sqrt(max(0.0, (n - d) / (n * (d - 1)))) if d > 1 else float("inf")


@bank.mistake(
    "n ≤ d not handled",
    "when n ≤ d the vectors can all be orthogonal and the bound is 0 (the fraction would be negative)",
)
def _welch_numpy_no_case(n, d):
    with np.errstate(invalid="ignore"):
        return float(np.sqrt((n - d) / (d * (n - 1))))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("max(0, ·) with n/d")
def _welch_max(n, d):
    return math.sqrt(max(0.0, (n / d - 1) / (n - 1)))


@bank.alternative("torch, 0-d tensor")
def _welch_torch(n, d):
    return torch.tensor((n - d) / (d * (n - 1)), dtype=torch.float64).clamp_min(0).sqrt()


@bank.alternative("NumPy float32")
def _welch_numpy(n, d):
    return np.float32(np.sqrt(np.maximum(0.0, (n - d) / (d * (n - 1.0)))))


WELCH_BOUND = Exercise(
    name="welch_bound",
    reference=welch_bound,
    cases=_welch_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "The bound only bites when there are more vectors than dimensions; "
        "otherwise an orthonormal set has every cosine 0.",
        "It is the square root of (n − d) divided by d times (n − 1).",
    ],
)
EXERCISES = {WELCH_BOUND.name: WELCH_BOUND}


def check_welch_bound(fn):
    """Check a student's ``welch_bound``."""
    return WELCH_BOUND.check(fn)
