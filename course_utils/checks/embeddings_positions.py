"""Checks for notebook 02 (embeddings and positions): embedding lookup, sinusoidal encoding, RoPE.

Each exercise has its cases, a bank of typical mistakes (each with its hint), a bank of accepted
alternatives (correct answers written differently, which must pass) and progressive hints. The
required forms are stated in the notebook before each exercise: rows of ``W_E`` (not columns),
sine in even and cosine in odd dimensions with positions from 0, and RoPE pairs of neighbouring
features (the interleaved layout).
"""

from __future__ import annotations

import torch

from course_utils.checks import _embeddings_positions_banks as bank
from course_utils.checks.core import Alternative, Case, Exercise, Mistake, Property
from course_utils.embeddings import embed
from course_utils.positions import rope_rotate as _rope_reference
from course_utils.positions import sinusoidal_encoding as _sinusoidal_reference


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


EMBEDDING_LOOKUP = Exercise(
    name="embedding_lookup",
    reference=embedding_lookup,
    cases=_lookup_cases,
    tolerance="exact",
    properties=[
        Property(
            "one row per id",
            lambda case, out: tuple(out.shape) == (*case.args[0].shape, case.args[1].shape[1]),
            "the output should have shape (*token_ids.shape, d_model): one row of W_E per id",
        )
    ],
    mistakes=[
        Mistake(
            "reads columns",
            bank.lookup_columns,
            "you read columns of W_E: in this course W_E is (d_vocab, d_model), so a token id picks a ROW",
        ),
        Mistake(
            "one-based ids",
            bank.lookup_one_based,
            "you shifted the ids by one: ids start at 0, so id 0 is row 0 of W_E",
        ),
        Mistake(
            "unique ids",
            bank.lookup_unique,
            "you dropped repeated ids or reordered them: every token gets its row, in order, repeats included",
        ),
    ],
    alternatives=[
        Alternative("F.embedding", bank.lookup_f_embedding),
        Alternative("index_select and reshape", bank.lookup_index_select),
        Alternative("one-hot matrix product", bank.lookup_one_hot),
        Alternative("a Python loop", bank.lookup_loop),
        Alternative("nn.Embedding.from_pretrained", bank.lookup_module),
    ],
    hints=[
        "A token id is a row number: the answer is the rows of W_E whose numbers are in token_ids, in the same order.",
        "Indexing a tensor with an integer tensor picks one slice along the first dimension per index and keeps "
        "the index tensor's shape in front, so no loop or reshape is needed.",
    ],
)


# -- sinusoidal encoding -------------------------------------------------------------------------
def sinusoidal_encoding(n_ctx, d_model):
    """Reference: PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same), float32."""
    return _sinusoidal_reference(n_ctx, d_model)


def _sinusoidal_cases(seed: int) -> list[Case]:
    return [
        Case("n_ctx = 4, d_model = 4 (the worked table)", (4, 4)),
        Case(f"n_ctx = {10 + seed}, d_model = 8", (10 + seed, 8)),
        Case("n_ctx = 50, d_model = 64", (50, 64)),
    ]


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
    mistakes=[
        Mistake(
            "sin and cos swapped",
            bank.sin_cos_swapped,
            "sine and cosine are swapped: even dimensions (0, 2, ...) hold the sine, odd ones the cosine",
        ),
        Mistake(
            "exponent per dimension",
            bank.exponent_per_dimension,
            "each sine/cosine PAIR shares one wavelength: "
            "the exponent is 2i/d_model with i the pair index, not the dimension index",
        ),
        Mistake(
            "halves",
            bank.halves_not_interleaved,
            "you put all the sines first and all the cosines after: "
            "this exercise interleaves them (sin, cos, sin, cos, ...)",
        ),
        Mistake(
            "positions from 1",
            bank.positions_from_one,
            "positions start at 0: row 0 of the table is sin(0) = 0 and cos(0) = 1",
        ),
        Mistake(
            "multiplies by the divisor",
            bank.multiplies_by_the_divisor,
            "the angle is pos DIVIDED by 10000^(2i/d_model): later pairs must turn more slowly, not faster",
        ),
    ],
    alternatives=[
        Alternative("float32 throughout, pos / 10000 ** (2i / d)", bank.sinusoidal_float32_power),
        Alternative("torch.pow and stack/flatten", bank.sinusoidal_torch_pow),
        Alternative("exp(-log(10000) · 2i / d) divisors", bank.sinusoidal_exp_log),
        Alternative("NumPy with Python loops", bank.sinusoidal_numpy_loops),
    ],
    hints=[
        "Work with pairs: pair i (dimensions 2i and 2i + 1) has one angle per position, pos divided by "
        "10000 raised to 2i/d_model. Build that (n_ctx, d_model/2) grid of angles first, by broadcasting a "
        "column of positions against a row of divisors.",
        "Fill the even columns with the sine of the angle grid and the odd columns with its cosine (strided "
        "slicing with a step of 2 selects them), or stack sine and cosine on a new last axis and flatten it. "
        "Positions count from 0, and the result should be float32.",
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


def _keeps_length(case: Case, out) -> bool:
    x = case.args[0]
    return bool(
        torch.allclose(torch.as_tensor(out).double().norm(dim=-1), x.double().norm(dim=-1), rtol=1e-4, atol=1e-5)
    )


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
    mistakes=[
        Mistake(
            "rotates backwards",
            bank.rope_backwards,
            "you rotate clockwise: the new pair is (a·cos − b·sin, a·sin + b·cos) for angle pos × frequency",
        ),
        Mistake(
            "one frequency",
            bank.rope_one_frequency,
            "every pair turns at the same speed: pair i turns at 1 / 10000^(2i/d_head) radians per position",
        ),
        Mistake(
            "half-split pairs",
            bank.rope_halves,
            "you paired dimension i with i + d_head/2 (the Llama layout): "
            "this exercise pairs neighbours, (0, 1), (2, 3), ...",
        ),
        Mistake(
            "exponent i/d_head",
            bank.rope_exponent_without_two,
            "the exponent is 2i/d_head (i the pair index, so it runs over 0, 2, 4, ... / d_head), not i/d_head",
        ),
    ],
    alternatives=[
        Alternative("float32 angles", bank.rope_float32_angles),
        Alternative("complex multiplication", bank.rope_complex),
        Alternative("rotate-half with repeated cos/sin", bank.rope_rotate_half),
        Alternative("einsum with 2 × 2 rotation matrices", bank.rope_rotation_matrices),
    ],
    hints=[
        "Treat each neighbouring pair of features as a point in the plane and turn it by an angle that is the "
        "row's position times that pair's speed; the speeds are the sinusoidal table's, with d_head in place "
        "of d_model.",
        "Build a (pos, d_head/2) grid of angles, take its cosine and sine, split x into its even-indexed and "
        "odd-indexed features (a and b), form the two rotated components, and put them back in the same "
        "interleaved order. Broadcasting handles any leading batch and head dimensions.",
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
