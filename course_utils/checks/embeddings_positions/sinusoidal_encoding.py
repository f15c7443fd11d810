"""Exercise ``sinusoidal_encoding(n_ctx, d_model)``: the (n_ctx, d_model) table of sinusoidal positions.

Required form (stated in the notebook): PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) and PE[pos, 2i+1] =
cos(the same angle), sine in even and cosine in odd dimensions (interleaved), positions from 0, float32.
"""

from __future__ import annotations

import random
import math

import numpy as np
import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.positions import sinusoid_frequencies
from course_utils.positions import sinusoidal_encoding as _sinusoidal_reference


def sinusoidal_encoding(n_ctx, d_model):
    """Reference: PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same), float32."""
    return _sinusoidal_reference(n_ctx, d_model)


def _sinusoidal_cases(seed: int) -> list[Case]:
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        sizes = [(rng.randint(2, 8), 2 * rng.randint(1, 4)), (rng.randint(5, 30), 2 * rng.randint(3, 8)),
                 (rng.randint(30, 80), 2 * rng.randint(16, 48))]
        return [Case(f"n_ctx = {n}, d_model = {d}", (n, d)) for n, d in sizes]
    return [
        Case("n_ctx = 4, d_model = 4 (the worked table)", (4, 4)),
        Case(f"n_ctx = {10 + seed}, d_model = 8", (10 + seed, 8)),
        Case("n_ctx = 50, d_model = 64", (50, 64)),
    ]


def table(n_ctx, d_model, exponent, first, second, start=0):
    """A pair-interleaved table ``first(angle), second(angle)`` per pair, the angle ``pos * exponent``."""
    angles = torch.arange(start, start + n_ctx, dtype=torch.float64)[:, None] * exponent  # (n_ctx, d_model // 2)
    pe = torch.stack([first(angles), second(angles)], dim=-1)  # (n_ctx, d_model // 2, 2)
    return pe.reshape(n_ctx, d_model).float()


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "sin and cos swapped",
    "sine and cosine are swapped: even dimensions (0, 2, ...) hold the sine, odd ones the cosine",
)
def sin_cos_swapped(n_ctx, d_model):
    return table(n_ctx, d_model, sinusoid_frequencies(d_model), torch.cos, torch.sin)


@bank.mistake(
    "exponent per dimension",
    "each sine/cosine PAIR shares one wavelength: "
    "the exponent is 2i/d_model with i the pair index, not the dimension index",
)
def exponent_per_dimension(n_ctx, d_model):
    j = torch.arange(d_model, dtype=torch.float64)
    angles = torch.arange(n_ctx, dtype=torch.float64)[:, None] / 10000 ** (j / d_model)  # (n_ctx, d_model)
    return torch.where(j.long() % 2 == 0, angles.sin(), angles.cos()).float()


@bank.mistake(
    "halves",
    "you put all the sines first and all the cosines after: this exercise interleaves them (sin, cos, sin, cos, ...)",
)
def halves_not_interleaved(n_ctx, d_model):
    angles = torch.arange(n_ctx, dtype=torch.float64)[:, None] * sinusoid_frequencies(d_model)
    return torch.cat([angles.sin(), angles.cos()], dim=-1).float()  # (n_ctx, d_model)


@bank.mistake("positions from 1", "positions start at 0: row 0 of the table is sin(0) = 0 and cos(0) = 1")
def positions_from_one(n_ctx, d_model):
    return table(n_ctx, d_model, sinusoid_frequencies(d_model), torch.sin, torch.cos, start=1)


@bank.mistake(
    "multiplies by the divisor",
    "the angle is pos DIVIDED by 10000^(2i/d_model): later pairs must turn more slowly, not faster",
)
def multiplies_by_the_divisor(n_ctx, d_model):
    return table(n_ctx, d_model, 1 / sinusoid_frequencies(d_model), torch.sin, torch.cos)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("float32 throughout, pos / 10000 ** (2i / d)")
def sinusoidal_float32_power(n_ctx, d_model):
    pos = torch.arange(n_ctx, dtype=torch.float32)[:, None]  # (n_ctx, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    angles = pos / 10000 ** (two_i / d_model)  # (n_ctx, d_model // 2), all in float32
    pe = torch.zeros(n_ctx, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe


@bank.alternative("torch.pow and stack/flatten")
def sinusoidal_torch_pow(n_ctx, d_model):
    two_i = torch.arange(0, d_model, 2).float()
    angles = torch.arange(n_ctx).float().unsqueeze(1) / torch.pow(torch.tensor(10000.0), two_i / d_model)
    return torch.stack([angles.sin(), angles.cos()], dim=2).flatten(1)  # (n_ctx, d_model)


@bank.alternative("exp(-log(10000) · 2i / d) divisors")
def sinusoidal_exp_log(n_ctx, d_model):
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))  # (d_model // 2,)
    pe = torch.empty(n_ctx, d_model)
    pe[:, 0::2] = torch.sin(torch.arange(n_ctx).float()[:, None] * div_term)
    pe[:, 1::2] = torch.cos(torch.arange(n_ctx).float()[:, None] * div_term)
    return pe


@bank.alternative("NumPy with Python loops")
def sinusoidal_numpy_loops(n_ctx, d_model):
    pe = np.zeros((n_ctx, d_model), dtype=np.float32)
    for pos in range(n_ctx):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return pe


SINUSOIDAL_ENCODING = Exercise(
    name="sinusoidal_encoding",
    reference=sinusoidal_encoding,
    cases=_sinusoidal_cases,
    properties=[
        Property(
            "values in [-1, 1]",
            lambda case, out: bool((torch.as_tensor(out).abs() <= 1 + 1e-6).all()),
            "every entry is a sine or cosine, so it must lie in [-1, 1]",
        )
    ],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Work with pairs: pair i (dimensions 2i and 2i + 1) has one angle per position, pos divided by "
        "10000 raised to 2i/d_model. Build that (n_ctx, d_model/2) grid of angles first, by broadcasting a "
        "column of positions against a row of divisors.",
        "Fill the even columns with the sine of the angle grid and the odd columns with its cosine (strided "
        "slicing with a step of 2 selects them), or stack sine and cosine on a new last axis and flatten it. "
        "Positions count from 0, and the result should be float32.",
    ],
)
EXERCISES = {SINUSOIDAL_ENCODING.name: SINUSOIDAL_ENCODING}


def check_sinusoidal_encoding(fn):
    """Check a student's ``sinusoidal_encoding(n_ctx, d_model)``."""
    return SINUSOIDAL_ENCODING.check(fn)
