"""Checks for notebook 02 (embeddings and positions): embedding lookup, sinusoidal encoding, RoPE."""

from __future__ import annotations

import torch

from course_utils.checks.core import Case, Exercise, Mistake, Property
from course_utils.embeddings import embed
from course_utils.positions import rope_rotate as _rope_reference
from course_utils.positions import sinusoid_frequencies, sinusoidal_encoding as _sinusoidal_reference


# -- embedding lookup ----------------------------------------------------------------------------
def embedding_lookup(token_ids, W_E):
    """Reference: the row of W_E for every token id, in order, repeats included."""
    return embed(token_ids, W_E)


def _lookup_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    W_E = torch.randn(12, 5, generator=gen, dtype=torch.float64)
    ids = torch.tensor([7, 2, 7, 0, 11]) if seed == 0 else torch.randint(0, 12, (6,), generator=gen)
    ids_2d = torch.randint(0, 12, (2, 4), generator=gen)
    ids_2d[0, 1] = ids_2d[0, 0] = (seed + 3) % 12  # a repeated id, out of order with the rest
    return [
        Case("ids [7, 2, 7, 0, 11] into a 12 × 5 table" if seed == 0 else "6 random ids", (ids, W_E)),
        Case("a batch of 2 sequences of 4 ids", (ids_2d, W_E)),
        Case("float32 table of 30 × 8", (torch.tensor([29, 0, 3]), torch.randn(30, 8, generator=gen))),
    ]


def _lookup_columns(token_ids, W_E):
    return W_E.T[token_ids % W_E.shape[1]]


def _lookup_one_based(token_ids, W_E):
    return W_E[token_ids - 1]


def _lookup_unique(token_ids, W_E):
    return W_E[token_ids.unique()]


EMBEDDING_LOOKUP = Exercise(
    name="embedding_lookup",
    reference=embedding_lookup,
    cases=_lookup_cases,
    properties=[Property("one row per id", lambda case, out: tuple(out.shape) == (*case.args[0].shape, case.args[1].shape[1]),
                         "the output should have shape (*token_ids.shape, d_model): one row of W_E per id")],
    mistakes=[
        Mistake("reads columns", _lookup_columns,
                "you read columns of W_E: in this course W_E is (d_vocab, d_model), so a token id picks a ROW, W_E[token_ids]"),
        Mistake("one-based ids", _lookup_one_based,
                "you shifted the ids by one: ids start at 0, so id 0 is row 0 of W_E"),
        Mistake("unique ids", _lookup_unique,
                "you dropped repeated ids or reordered them: every token gets its row, in order, repeats included"),
    ],
)


# -- sinusoidal encoding -------------------------------------------------------------------------
def sinusoidal_encoding(n_ctx, d_model):
    """Reference: PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same), float32."""
    return _sinusoidal_reference(n_ctx, d_model)


def _sinusoidal_cases(seed: int) -> list[Case]:
    return [Case("n_ctx = 4, d_model = 4 (the worked table)", (4, 4)),
            Case(f"n_ctx = {10 + seed}, d_model = 8", (10 + seed, 8)),
            Case("n_ctx = 50, d_model = 64", (50, 64))]


def _table(n_ctx, d_model, exponent, first, second, start=0):
    angles = torch.arange(start, start + n_ctx, dtype=torch.float64)[:, None] * exponent  # (n_ctx, d_model // 2)
    pe = torch.stack([first(angles), second(angles)], dim=-1)  # (n_ctx, d_model // 2, 2)
    return pe.reshape(n_ctx, d_model).float()


def _sin_cos_swapped(n_ctx, d_model):
    return _table(n_ctx, d_model, sinusoid_frequencies(d_model), torch.cos, torch.sin)


def _exponent_per_dimension(n_ctx, d_model):
    j = torch.arange(d_model, dtype=torch.float64)
    angles = torch.arange(n_ctx, dtype=torch.float64)[:, None] / 10000 ** (j / d_model)  # (n_ctx, d_model)
    return torch.where(j.long() % 2 == 0, angles.sin(), angles.cos()).float()


def _halves_not_interleaved(n_ctx, d_model):
    angles = torch.arange(n_ctx, dtype=torch.float64)[:, None] * sinusoid_frequencies(d_model)
    return torch.cat([angles.sin(), angles.cos()], dim=-1).float()  # (n_ctx, d_model)


def _positions_from_one(n_ctx, d_model):
    return _table(n_ctx, d_model, sinusoid_frequencies(d_model), torch.sin, torch.cos, start=1)


SINUSOIDAL_ENCODING = Exercise(
    name="sinusoidal_encoding",
    reference=sinusoidal_encoding,
    cases=_sinusoidal_cases,
    properties=[Property("values in [-1, 1]", lambda case, out: bool((out.abs() <= 1 + 1e-6).all()),
                         "every entry is a sine or cosine, so it must lie in [-1, 1]")],
    mistakes=[
        Mistake("sin and cos swapped", _sin_cos_swapped,
                "sine and cosine are swapped: even dimensions (0, 2, ...) hold the sine, odd ones the cosine"),
        Mistake("exponent per dimension", _exponent_per_dimension,
                "each sine/cosine PAIR shares one wavelength: the exponent is 2i/d_model with i the pair index, not the dimension index"),
        Mistake("halves", _halves_not_interleaved,
                "you put all the sines first and all the cosines after: this exercise interleaves them (sin, cos, sin, cos, ...)"),
        Mistake("positions from 1", _positions_from_one,
                "positions start at 0: row 0 of the table is sin(0) = 0 and cos(0) = 1"),
    ],
)


# -- RoPE ----------------------------------------------------------------------------------------
def rope_rotate(x):
    """Reference: rotate pair (2i, 2i+1) of row pos by angle pos / 10000^(2i/d_head)."""
    return _rope_reference(x)


def _rope_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("3 positions, d_head = 2, all rows [1, 0]", (torch.tensor([[1.0, 0.0]] * 3, dtype=torch.float64),)),
        Case("6 positions, d_head = 8", (torch.randn(6, 8, generator=gen, dtype=torch.float64),)),
        Case("batch 2, 3 heads, 5 positions, d_head = 4 (float32)", (torch.randn(2, 3, 5, 4, generator=gen),)),
    ]


def _rope_with(x, sign=1.0, same_freq=False, halves=False):
    d, n = x.shape[-1], x.shape[-2]
    freqs = torch.ones(d // 2, dtype=torch.float64) if same_freq else sinusoid_frequencies(d)
    angles = sign * torch.arange(n, dtype=torch.float64)[:, None] * freqs  # (pos, d // 2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if halves:
        a, b = x[..., : d // 2], x[..., d // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(x.shape)


def _rope_backwards(x):
    return _rope_with(x, sign=-1.0)


def _rope_one_frequency(x):
    return _rope_with(x, same_freq=True)


def _rope_halves(x):
    return _rope_with(x, halves=True)


def _keeps_length(case: Case, out) -> bool:
    x = case.args[0]
    return bool(torch.allclose(out.double().norm(dim=-1), x.double().norm(dim=-1), rtol=1e-4, atol=1e-5))


ROPE_ROTATE = Exercise(
    name="rope_rotate",
    reference=rope_rotate,
    cases=_rope_cases,
    properties=[Property("keeps each row's length", _keeps_length,
                         "a rotation never changes a vector's length: check your cos/sin pairing")],
    mistakes=[
        Mistake("rotates backwards", _rope_backwards,
                "you rotate clockwise: the new pair is (a·cos − b·sin, a·sin + b·cos) for angle pos × frequency"),
        Mistake("one frequency", _rope_one_frequency,
                "every pair turns at the same speed: pair i turns at 1 / 10000^(2i/d_head) radians per position"),
        Mistake("half-split pairs", _rope_halves,
                "you paired dimension i with i + d_head/2 (the Llama layout): here pairs are neighbours, (0, 1), (2, 3), ..."),
    ],
)

EXERCISES = {ex.name: ex for ex in (EMBEDDING_LOOKUP, SINUSOIDAL_ENCODING, ROPE_ROTATE)}


def check_embedding_lookup(fn):
    """Check a student's ``embedding_lookup(token_ids, W_E)``."""
    return EMBEDDING_LOOKUP.check(fn)


def check_sinusoidal_encoding(fn):
    """Check a student's ``sinusoidal_encoding(n_ctx, d_model)``."""
    return SINUSOIDAL_ENCODING.check(fn)


def check_rope_rotate(fn):
    """Check a student's ``rope_rotate(x)``."""
    return ROPE_ROTATE.check(fn)
