"""Exercise ``embed_tokens(tokens, W_E, W_pos)``: a GPT's input, token embedding plus position embedding.

Required form (stated in the notebook): ``tokens`` (batch, pos) ids with pos <= n_ctx, ``W_E``
(d_vocab, d_model), ``W_pos`` (n_ctx, d_model); return (batch, pos, d_model), the row of ``W_E`` of
each token plus the row of ``W_pos`` of its position (0 for the first token). Checked against
``course_utils.gpt.model.GPT.embed``.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import F64
from course_utils.gpt.model import GPT


def embed_tokens(tokens, W_E, W_pos):
    """Reference: ``GPT.embed`` on a model holding exactly these two tables."""
    return GPT.embed(SimpleNamespace(W_E=W_E, W_pos=W_pos), tokens)


def _embed_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    d_vocab, n_ctx, d_model = 10, 12, 6  # d_vocab < n_ctx, so even a mix-up of the two tables runs
    tables = lambda: (torch.randn(d_vocab, d_model, generator=gen, dtype=F64),  # noqa: E731
                      torch.randn(n_ctx, d_model, generator=gen, dtype=F64))
    repeated = torch.tensor([[3, 3, 3, 7, 3]])  # one token at four positions: four different vectors
    return [
        Case("2 sequences of 5 tokens, context 12", (torch.randint(0, d_vocab, (2, 5), generator=gen), *tables())),
        Case("the same token at four positions", (repeated, *tables())),
        Case("a full context of 12 tokens", (torch.randint(0, d_vocab, (1, n_ctx), generator=gen), *tables())),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no positions", "add each position's row of W_pos: without it the model cannot tell the order apart")
def embed_no_positions(tokens, W_E, W_pos):
    return W_E[tokens]


@bank.mistake(
    "positions looked up by token id",
    "W_pos is indexed by where a token sits (0, 1, 2, ...), not by which token it is",
)
def embed_pos_by_token(tokens, W_E, W_pos):
    return W_E[tokens] + W_pos[tokens]


@bank.mistake("positions start at 1", "the first token sits at position 0: its position vector is row 0 of W_pos")
def embed_from_one(tokens, W_E, W_pos):
    return W_E[tokens] + W_pos[1 : tokens.shape[1] + 1]


@bank.mistake(
    "the last rows of W_pos",
    "a sequence shorter than n_ctx uses the FIRST pos rows of W_pos (positions 0 .. pos - 1)",
)
def embed_last_rows(tokens, W_E, W_pos):
    return W_E[tokens] + W_pos[W_pos.shape[0] - tokens.shape[1] :]


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.embedding and arange")
def _embed_functional(tokens, W_E, W_pos):
    positions = torch.arange(tokens.shape[1])
    return F.embedding(tokens, W_E) + F.embedding(positions, W_pos)[None]


@bank.alternative("one-hot times W_E")
def _embed_one_hot(tokens, W_E, W_pos):
    one_hot = F.one_hot(tokens, W_E.shape[0]).to(W_E.dtype)  # (batch, pos, d_vocab)
    return one_hot @ W_E + W_pos[: tokens.shape[1]]


@bank.alternative("index_select, float32")
def _embed_index_select(tokens, W_E, W_pos):
    rows = W_E.float().index_select(0, tokens.reshape(-1)).reshape(*tokens.shape, -1)
    return rows + W_pos.float()[: tokens.shape[1]].unsqueeze(0)


@bank.alternative("a loop over positions")
def _embed_loop(tokens, W_E, W_pos):
    return torch.stack([W_E[tokens[:, i]] + W_pos[i] for i in range(tokens.shape[1])], dim=1)


EMBED_TOKENS = Exercise(
    name="embed_tokens",
    reference=embed_tokens,
    cases=_embed_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two table lookups added together: one by what each token is, one by where it sits. Indexing a table with a "
        "tensor of ids returns one row per id.",
        "The position part has one row per position of the sequence, shared by every sequence of the batch: "
        "slice the first pos rows of the position table and let broadcasting add them to every sequence.",
    ],
)
EXERCISES = {EMBED_TOKENS.name: EMBED_TOKENS}


def check_embed_tokens(fn):
    """Check a student's ``embed_tokens(tokens, W_E, W_pos)``."""
    return EMBED_TOKENS.check(fn)
