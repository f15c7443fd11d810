"""Exercise ``rope_rotate(x)``: rotary positions, each pair of features of row pos turned by its own angle.

Required form (stated in the notebook): pairs of NEIGHBOURING features (2i, 2i+1) (the interleaved layout of
RoFormer and Meta's Llama code, not the rotate-half layout of GPT-NeoX and Hugging Face, which pairs i with
i + d_head/2), turned anticlockwise by pos / 10000^(2i/d_head); any leading batch and head dimensions.
"""

from __future__ import annotations

import math

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.checks.shared import keyed_uniform
from course_utils.positions import rope_rotate as _rope_reference
from course_utils.positions import sinusoid_frequencies


def rope_rotate(x):
    """Reference: rotate pair (2i, 2i+1) of row pos by angle pos / 10000^(2i/d_head)."""
    return _rope_reference(x)


def _unit_rows(seed: int) -> torch.Tensor:
    """Three equal rows [1, 0]; on hidden seeds [cos a, sin a] with a keyed angle a."""
    if not seed:
        return torch.tensor([[1.0, 0.0]] * 3, dtype=torch.float64)
    angle = keyed_uniform(seed, -math.pi, math.pi)
    return torch.stack([angle.cos(), angle.sin()]).expand(3, 2).clone()


def _rope_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("3 positions, d_head = 2, all rows the same unit vector ([1, 0] in the public case)", (_unit_rows(seed),)),
        Case("6 positions, d_head = 8", (torch.randn(6, 8, generator=gen, dtype=torch.float64),)),
        Case("batch 2, 3 heads, 5 positions, d_head = 4 (float32)", (torch.randn(2, 3, 5, 4, generator=gen),)),
    ]


def _keeps_length(case: Case, out) -> bool:
    x = case.args[0]
    return bool(
        torch.allclose(torch.as_tensor(out).double().norm(dim=-1), x.double().norm(dim=-1), rtol=1e-4, atol=1e-5)
    )


def rope_with(x, sign=1.0, freqs=None, halves=False):
    """RoPE with a chosen direction (``sign``), speeds (``freqs``) and pairing (neighbours, or ``halves``)."""
    d, n = x.shape[-1], x.shape[-2]
    freqs = sinusoid_frequencies(d) if freqs is None else freqs
    angles = sign * torch.arange(n, dtype=torch.float64)[:, None] * freqs  # (pos, d // 2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if halves:
        a, b = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(x.shape)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "rotates backwards",
    "you rotate clockwise: the new pair is (a·cos − b·sin, a·sin + b·cos) for angle pos × frequency",
)
def rope_backwards(x):
    return rope_with(x, sign=-1.0)


@bank.mistake(
    "one frequency",
    "every pair turns at the same speed: pair i turns at 1 / 10000^(2i/d_head) radians per position",
)
def rope_one_frequency(x):
    return rope_with(x, freqs=torch.ones(x.shape[-1] // 2, dtype=torch.float64))


@bank.mistake(
    "half-split pairs",
    "you paired dimension i with i + d_head/2 (the rotate-half layout of GPT-NeoX and Hugging Face's Llama): "
    "this exercise asks for the interleaved layout of the RoFormer paper and Meta's Llama code, "
    "neighbours (0, 1), (2, 3), ...",
)
def rope_halves(x):
    return rope_with(x, halves=True)


@bank.mistake(
    "exponent i/d_head",
    "the exponent is 2i/d_head (i the pair index, so it runs over 0, 2, 4, ... / d_head), not i/d_head",
)
def rope_exponent_without_two(x):
    d = x.shape[-1]
    return rope_with(x, freqs=10000 ** (-torch.arange(d // 2, dtype=torch.float64) / d))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("float32 angles")
def rope_float32_angles(x):
    d, n = x.shape[-1], x.shape[-2]
    angles = torch.arange(n, dtype=torch.float32)[:, None] / 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


@bank.alternative("complex multiplication (as Meta's Llama code)")
def rope_complex(x):
    d, n = x.shape[-1], x.shape[-2]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    turn = torch.polar(
        torch.ones(n, d // 2, dtype=torch.float64), torch.arange(n, dtype=torch.float64)[:, None] * theta
    )
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * turn).reshape(x.shape).to(x.dtype)


@bank.alternative("rotate-every-two with repeated cos/sin (as GPT-J)")
def rope_rotate_every_two(x):
    d, n = x.shape[-1], x.shape[-2]
    angles = torch.arange(n)[:, None] * 10000 ** (-torch.arange(0, d, 2) / d)  # (pos, d // 2), float32
    cos = angles.cos().repeat_interleave(2, dim=-1).to(x.dtype)  # (pos, d): each angle twice
    sin = angles.sin().repeat_interleave(2, dim=-1).to(x.dtype)
    partner = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).reshape(x.shape)  # (-b, a) per pair
    return x * cos + partner * sin


@bank.alternative("einsum with 2 × 2 rotation matrices")
def rope_rotation_matrices(x):
    d, n = x.shape[-1], x.shape[-2]
    angles = torch.arange(n, dtype=torch.float64)[:, None] * sinusoid_frequencies(d)  # (pos, d // 2)
    c, s = angles.cos(), angles.sin()
    R = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2).to(x.dtype)  # (pos, d // 2, 2, 2)
    pairs = x.reshape(*x.shape[:-1], d // 2, 2)  # (..., pos, d // 2, 2)
    return torch.einsum("pkij,...pkj->...pki", R, pairs).reshape(x.shape)


ROPE_ROTATE = Exercise(
    name="rope_rotate",
    reference=rope_rotate,
    cases=_rope_cases,
    properties=[
        Property(
            "keeps each row's length",
            _keeps_length,
            "a rotation never changes a vector's length: check your cos/sin pairing",
        )
    ],
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Treat each neighbouring pair of features as a point in the plane and turn it by an angle that is the "
        "row's position times that pair's speed; the speeds are the sinusoidal table's, with d_head in place "
        "of d_model.",
        "Build a (pos, d_head/2) grid of angles, take its cosine and sine, split x into its even-indexed and "
        "odd-indexed features (a and b), form the two rotated components, and put them back in the same "
        "interleaved order. Broadcasting handles any leading batch and head dimensions.",
    ],
)
EXERCISES = {ROPE_ROTATE.name: ROPE_ROTATE}


def check_rope_rotate(fn):
    """Check a student's ``rope_rotate(x)``."""
    return ROPE_ROTATE.check(fn)
