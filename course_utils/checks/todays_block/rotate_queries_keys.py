"""Exercise ``rotate_queries_keys(q, k, offset=0, layout="halves")``: RoPE on a layer's query and key heads.

Required form (stated in the notebook): ``q`` (batch, n_heads, pos, d_head) and ``k`` (batch, n_kv_heads,
pos, d_head), the head counts possibly different (grouped-query attention); row ``p`` of every head is
rotated as position ``offset + p`` with base 10000, in the ``"halves"`` (rotate-half, the default) or
``"interleaved"`` pair layout; returns the pair ``(q, k)``. The student may call notebook 02's
``course_utils.positions.rope_rotate``. Checked against ``course_utils.llama.rotate_queries_keys`` at the
"loose" tolerance: angles computed in float32 (as ``transformers`` does) drift by about 1e-5 at position 500.
"""

from __future__ import annotations

import random

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.llama.rotary import rotate_queries_keys as _course_rotate
from course_utils.positions import rope_rotate, sinusoid_frequencies

F64 = torch.float64


def rotate_queries_keys(q, k, offset=0, layout="halves"):
    """Reference: every head's row p rotated as position offset + p (the course's ``rotate_queries_keys``)."""
    return _course_rotate(q, k, offset, layout=layout)


def _rotary_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=F64)  # noqa: E731
    offsets = (7, 3, 100) if not seed else tuple(random.Random(seed).randint(lo, hi) for lo, hi in
                                                  ((2, 20), (2, 20), (50, 500)))
    return [
        Case("batch 2, 4 query heads and 2 key/value heads, 5 positions, d_head 8, defaults (offset 0, halves)",
             (rand(2, 4, 5, 8), rand(2, 2, 5, 8))),
        Case(f"the same sizes, offset {offsets[0]} (a KV cache holding {offsets[0]} earlier positions)",
             (rand(2, 4, 5, 8), rand(2, 2, 5, 8)), {"offset": offsets[0]}),
        Case(f"interleaved layout, offset {offsets[1]}, 3 query heads and 3 key/value heads, d_head 6",
             (rand(1, 3, 4, 6), rand(1, 3, 4, 6)), {"offset": offsets[1], "layout": "interleaved"}),
        Case(f"one new position at offset {offsets[2]} (a decoding step), 4 query heads, 1 key/value head, d_head 16",
             (rand(3, 4, 1, 16), rand(3, 1, 1, 16)), {"offset": offsets[2]}),
        Case("float32, 2 query heads and 1 key/value head, 6 positions, d_head 4, offset 2, interleaved",
             (rand(2, 2, 6, 4).float(), rand(2, 1, 6, 4).float()), {"offset": 2, "layout": "interleaved"}),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("offset ignored", "row p sits at position offset + p: with a KV cache the new rows come after "
              "offset earlier ones, so count their positions from offset, not from 0")
def _offset_ignored(q, k, offset=0, layout="halves"):
    return rope_rotate(q, None, layout=layout), rope_rotate(k, None, layout=layout)


@bank.mistake("keys not rotated", "rotate the keys too, with the same positions: only then does q·k depend on "
              "the distance between the two positions")
def _keys_not_rotated(q, k, offset=0, layout="halves"):
    return rope_rotate(q, torch.arange(offset, offset + q.shape[2]), layout=layout), k


@bank.mistake("layouts swapped", "\"halves\" pairs feature i with i + d_head/2 (rotate-half), \"interleaved\" pairs "
              "neighbours (2i, 2i + 1): pass the layout on as it is")
def _layouts_swapped(q, k, offset=0, layout="halves"):
    other = "interleaved" if layout == "halves" else "halves"
    positions = torch.arange(offset, offset + q.shape[2])
    return rope_rotate(q, positions, layout=other), rope_rotate(k, positions, layout=other)


@bank.mistake("positions along the head axis", "the positions run along the third axis (pos) of (batch, head, "
              "pos, d_head); every head of a row gets that row's angle")
def _head_positions(q, k, offset=0, layout="halves"):
    def along_heads(x):
        return rope_rotate(x.transpose(1, 2), torch.arange(offset, offset + x.shape[1]), layout=layout).transpose(1, 2)

    return along_heads(q), along_heads(k)


@bank.mistake("keys counted from 0", "the keys' rows sit at the same positions as the queries' rows, offset + p: "
              "give q and k the same offset")
def _keys_from_zero(q, k, offset=0, layout="halves"):
    return rope_rotate(q, torch.arange(offset, offset + q.shape[2]), layout=layout), rope_rotate(k, None, layout=layout)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("pad with offset rows, rotate from 0, keep the last rows")
def _padded(q, k, offset=0, layout="halves"):
    def rotated(x):
        padded = torch.cat([x.new_zeros(*x.shape[:2], offset, x.shape[-1]), x], dim=2)
        return rope_rotate(padded, layout=layout)[:, :, offset:]

    return rotated(q), rotated(k)


@bank.alternative("own cos/sin tables in float32")
def _own_tables(q, k, offset=0, layout="halves"):
    d = q.shape[-1]
    angles = torch.arange(offset, offset + q.shape[2], dtype=torch.float32)[:, None] / 10000 ** (
        torch.arange(0, d, 2, dtype=torch.float32) / d)  # (pos, d // 2)
    cos, sin = angles.cos(), angles.sin()

    def rotated(x):
        if layout == "halves":
            a, b = x[..., : d // 2], x[..., d // 2:]
            return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)

    return rotated(q).to(q.dtype), rotated(k).to(k.dtype)


@bank.alternative("transformers' rotate_half with repeated cos/sin, complex numbers for interleaved")
def _hf_style(q, k, offset=0, layout="halves"):
    d = q.shape[-1]
    angles = torch.arange(offset, offset + q.shape[2], dtype=F64)[:, None] * sinusoid_frequencies(d)
    if layout == "interleaved":
        turn = torch.polar(torch.ones_like(angles), angles)  # (pos, d // 2), complex

        def rotated(x):
            z = torch.view_as_complex(x.double().unflatten(-1, (d // 2, 2)).contiguous())
            return torch.view_as_real(z * turn).flatten(-2).to(x.dtype)

        return rotated(q), rotated(k)
    emb = torch.cat([angles, angles], dim=-1)  # (pos, d)
    cos, sin = emb.cos(), emb.sin()

    def rotate_half(x):
        return torch.cat([-x[..., d // 2:], x[..., : d // 2]], dim=-1)

    return ((q * cos + rotate_half(q) * sin).to(q.dtype), (k * cos + rotate_half(k) * sin).to(k.dtype))


@bank.alternative("rope_rotate on the heads flattened into the batch")
def _flattened(q, k, offset=0, layout="halves"):
    positions = torch.arange(offset, offset + q.shape[2])
    return tuple(rope_rotate(x.flatten(0, 1), positions, 10000, layout).view_as(x) for x in (q, k))


ROTATE_QUERIES_KEYS = Exercise(
    name="rotate_queries_keys",
    reference=rotate_queries_keys,
    cases=_rotary_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    tolerance="loose",  # angles of positions in the hundreds, taken in float32 as real models do, are off by 1e-5
    hints=[
        "The rotation itself is notebook 02's rope_rotate, which takes the positions of the rows as a tensor. "
        "What is new here is which positions: the rows of this call start at offset, and q and k share them.",
        "Build one tensor of positions running from offset for as many rows as q has on its pos axis (the third "
        "axis), and rotate q and k with it in the layout you were given; rope_rotate broadcasts over batch and heads.",
    ],
)
EXERCISES = {ROTATE_QUERIES_KEYS.name: ROTATE_QUERIES_KEYS}


def check_rotate_queries_keys(fn):
    """Check a student's ``rotate_queries_keys(q, k, offset=0, layout="halves")``."""
    return ROTATE_QUERIES_KEYS.check(fn)
