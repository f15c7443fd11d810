"""Exercise ``shift_rotation(k, d_model)``: the matrix R_k with PE(pos + k) = R_k PE(pos) for every pos.

Required form (stated in the notebook): a (d_model, d_model) tensor acting on a COLUMN vector PE(pos) of the
interleaved sinusoidal table (sin in dimension 2i, cos in 2i + 1), block-diagonal with one 2 × 2 block per pair;
``k`` may be any int, negative included. The reference is ``course_utils.positions.shift_rotation``.
"""

from __future__ import annotations

import math
import random

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.positions import shift_rotation as _shift_reference
from course_utils.positions import sinusoid_frequencies, sinusoidal_encoding


def shift_rotation(k, d_model):
    """Reference: block i is [[cos b, sin b], [-sin b, cos b]] with b = k / 10000^(2i/d_model)."""
    return _shift_reference(k, d_model)


def _shift_cases(seed: int) -> list[Case]:
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        sizes = [(rng.randint(1, 9), 2 * rng.randint(1, 3)), (rng.randint(-40, -1), 2 * rng.randint(3, 8)),
                 (rng.randint(10, 300), 2 * rng.randint(8, 32))]
        return [Case(f"k = {k}, d_model = {d}", (k, d)) for k, d in sizes]
    return [Case("k = 1, d_model = 2 (sin 1, cos 1 -> sin 2, cos 2)", (1, 2)),
            Case("k = 3, d_model = 8", (3, 8)), Case("k = -5, d_model = 16", (-5, 16))]


def _shifts_the_table(case: Case, out) -> bool:
    k, d_model = case.args
    pe = sinusoidal_encoding(abs(k) + 4, d_model, dtype=torch.float64)  # (pos, d_model): rows 0 .. |k| + 3
    before, after = (pe[:4], pe[abs(k):]) if k >= 0 else (pe[abs(k):], pe[:4])
    return bool(torch.allclose(torch.as_tensor(out).double() @ before.T, after.T, atol=1e-4))


def blocks(k, d_model, freqs=None, transpose=False):
    """Block-diagonal 2 × 2 rotations by k × freqs; ``transpose`` gives the textbook [[c, -s], [s, c]]."""
    freqs = sinusoid_frequencies(d_model) if freqs is None else freqs
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, b in enumerate((k * freqs).tolist()):
        c, s = math.cos(b), math.sin(b)
        R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, -s], [s, c]] if transpose else [[c, s], [-s, c]])
    return R


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "the textbook rotation [[cos, -sin], [sin, cos]]",
    "your blocks turn the other way (you shift by -k): the pair here is (sin, cos), not (cos, sin), so the "
    "addition formulas give the rows (cos b, sin b) and (-sin b, cos b)",
)
def shift_textbook_blocks(k, d_model):
    return blocks(k, d_model, transpose=True)


@bank.mistake(
    "exponent i/d_model",
    "pair i turns at 1 / 10000^(2i/d_model) radians per position: the exponent is 2i/d_model, i the pair index",
)
def shift_exponent_without_two(k, d_model):
    return blocks(k, d_model, freqs=10000 ** (-torch.arange(d_model // 2, dtype=torch.float64) / d_model))


@bank.mistake(
    "one frequency for every pair",
    "every block turns by the same angle: pair i turns by k times ITS frequency, 1 / 10000^(2i/d_model)",
)
def shift_one_frequency(k, d_model):
    return blocks(k, d_model, freqs=torch.ones(d_model // 2, dtype=torch.float64))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.block_diag of 2 × 2 blocks, float32")
def shift_block_diag(k, d_model):
    angles = k / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    return torch.block_diag(*[torch.stack([torch.stack([a.cos(), a.sin()]), torch.stack([-a.sin(), a.cos()])])
                              for a in angles])


@bank.alternative("strided index assignment on the diagonals")
def shift_strided(k, d_model):
    b = k * torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    even, odd = torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)
    R[even, even], R[even, odd], R[odd, even], R[odd, odd] = b.cos(), b.sin(), -b.sin(), b.cos()
    return R


@bank.alternative("cos and sin read from row |k| of the sinusoidal table")
def shift_from_table(k, d_model):
    row = sinusoidal_encoding(abs(k) + 1, d_model, dtype=torch.float64)[abs(k)]  # sin(|k| w_i), cos(|k| w_i)
    s, c = row[0::2] * (1 if k >= 0 else -1), row[1::2]
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1], R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = c[i], s[i], -s[i], c[i]
    return R


@bank.alternative("matrix exponential of k times a block-diagonal generator")
def shift_matrix_exp(k, d_model):
    freqs = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    generator = torch.zeros(d_model, d_model, dtype=torch.float64)
    generator[torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)] = freqs
    generator[torch.arange(1, d_model, 2), torch.arange(0, d_model, 2)] = -freqs
    return torch.linalg.matrix_exp(k * generator)


SHIFT_ROTATION = Exercise(
    name="shift_rotation",
    reference=shift_rotation,
    cases=_shift_cases,
    properties=[
        Property(
            "moves the table k positions",
            _shifts_the_table,
            "R_k @ PE(pos) must equal PE(pos + k): check the order of sin and cos in each pair and the sign of "
            "each sine",
        )
    ],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Work on one pair first: write sin(a + b) and cos(a + b) with the addition formulas, where a is the pair's "
        "angle at pos and b its angle for k steps. The coefficients of sin a and cos a are one 2 × 2 block.",
        "Row 2i of R_k holds (cos b, sin b) in columns 2i and 2i + 1, row 2i + 1 holds (-sin b, cos b), with "
        "b = k / 10000^(2i/d_model); every entry outside the 2 × 2 blocks on the diagonal is zero.",
    ],
)
EXERCISES = {SHIFT_ROTATION.name: SHIFT_ROTATION}


def check_shift_rotation(fn):
    """Check a student's ``shift_rotation(k, d_model)``."""
    return SHIFT_ROTATION.check(fn)
