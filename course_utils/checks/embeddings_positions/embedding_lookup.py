"""Exercise ``embedding_lookup(token_ids, W_E)``: the row of ``W_E`` for every token id, in order, repeats included.

Required form (stated in the notebook): ``W_E`` is (d_vocab, d_model), so a token id picks a ROW (not a
column); the output has shape (*token_ids.shape, d_model). Compared exactly.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise, Property
from course_utils.embeddings import embed


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


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "reads columns", "you read columns of W_E: in this course W_E is (d_vocab, d_model), so a token id picks a ROW"
)
def lookup_columns(token_ids, W_E):
    return W_E.T[token_ids % W_E.shape[1]]


@bank.mistake("one-based ids", "you shifted the ids by one: ids start at 0, so id 0 is row 0 of W_E")
def lookup_one_based(token_ids, W_E):
    return W_E[token_ids - 1]


@bank.mistake(
    "unique ids", "you dropped repeated ids or reordered them: every token gets its row, in order, repeats included"
)
def lookup_unique(token_ids, W_E):
    return W_E[token_ids.unique()]


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.embedding")
def lookup_f_embedding(token_ids, W_E):
    return F.embedding(token_ids, W_E)


@bank.alternative("index_select and reshape")
def lookup_index_select(token_ids, W_E):
    rows = torch.index_select(W_E, 0, token_ids.reshape(-1))  # (n_ids, d_model)
    return rows.reshape(*token_ids.shape, W_E.shape[1])


@bank.alternative("one-hot matrix product")
def lookup_one_hot(token_ids, W_E):
    return F.one_hot(token_ids, W_E.shape[0]).to(W_E.dtype) @ W_E


@bank.alternative("a Python loop")
def lookup_loop(token_ids, W_E):
    rows = [W_E[int(i)] for i in token_ids.flatten()]
    return torch.stack(rows).reshape(*token_ids.shape, W_E.shape[1])


@bank.alternative("nn.Embedding.from_pretrained")
def lookup_module(token_ids, W_E):
    return torch.nn.Embedding.from_pretrained(W_E)(token_ids)


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
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "A token id is a row number: the answer is the rows of W_E whose numbers are in token_ids, in the same order.",
        "Indexing a tensor with an integer tensor picks one slice along the first dimension per index and keeps "
        "the index tensor's shape in front, so no loop or reshape is needed.",
    ],
)
EXERCISES = {EMBEDDING_LOOKUP.name: EMBEDDING_LOOKUP}


def check_embedding_lookup(fn):
    """Check a student's ``embedding_lookup(token_ids, W_E)``."""
    return EMBEDDING_LOOKUP.check(fn)
