"""Exercise ``next_token_loss(logits, tokens)``: the mean cross-entropy of each position's logits
against the token after it.

Required form (stated in the notebook): ``logits`` (batch, pos, d_vocab) from the model run on
``tokens`` (batch, pos); a 0-d tensor, natural log; positions with no next token are not scored.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import WORKED_LOGITS
from course_utils.checks.shared import F64
from course_utils.gpt.training import sequence_loss



def next_token_loss(logits, tokens):
    """Reference: position i's logits are scored on token i + 1; the mean over every scored position."""
    return sequence_loss(logits[:, :-1], tokens[:, 1:])


def _loss_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    worked = torch.stack([WORKED_LOGITS, torch.randn(4, generator=gen)])[None]  # (1, 2, 4): row 0 predicts token 1
    return [
        Case(
            "YOUR CAT IS A LOVELY -> CAT (vocabulary CAT, DOG, IS, LOVELY)", (worked.double(), torch.tensor([[3, 0]]))
        ),
        Case(
            "2 sequences of 7 tokens, vocabulary 11",
            (torch.randn(2, 7, 11, generator=gen, dtype=F64), torch.randint(0, 11, (2, 7), generator=gen)),
        ),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "no shift",
    "position i predicts the NEXT token, so drop the last position's logits and the first target "
    "(yours scores each token against itself)",
)
def loss_no_shift(logits, tokens):
    return F.cross_entropy(logits.flatten(0, 1), tokens.flatten())


@bank.mistake(
    "shifted the wrong way", "the shift goes the other way: drop the LAST position's logits and the FIRST token"
)
def loss_shift_backwards(logits, tokens):
    return F.cross_entropy(logits[:, 1:].flatten(0, 1), tokens[:, :-1].flatten())


@bank.mistake("sum", "average over the scored positions; a sum grows with the batch and the length")
def loss_sum(logits, tokens):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten(), reduction="sum")


@bank.mistake("probability, not log", "the loss is minus the LOG of the right token's probability")
def loss_probabilities(logits, tokens):
    return -torch.softmax(logits[:, :-1], -1).gather(-1, tokens[:, 1:, None]).mean()  # forgot the log


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("log_softmax and gather")
def _loss_log_softmax(logits, tokens):
    return -F.log_softmax(logits[:, :-1], dim=-1).gather(-1, tokens[:, 1:, None]).mean()


@bank.alternative("logsumexp minus the right logit")
def _loss_logsumexp(logits, tokens):
    picked = logits[:, :-1].gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return (torch.logsumexp(logits[:, :-1], dim=-1) - picked).mean()


@bank.alternative("F.cross_entropy with the vocabulary as axis 1")
def _loss_vocab_axis_second(logits, tokens):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:])  # (batch, d_vocab, pos) form


NEXT_TOKEN_LOSS = Exercise(
    name="next_token_loss",
    reference=next_token_loss,
    cases=_loss_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Each position's logits are a guess about the token after it, so the last position has nothing to be scored on "
        "and the first token is never a target.",
        "Slice both tensors so they line up, flatten batch and position into rows, then take the cross-entropy.",
    ],
)
EXERCISES = {NEXT_TOKEN_LOSS.name: NEXT_TOKEN_LOSS}


def check_next_token_loss(fn):
    """Check a student's ``next_token_loss(logits, tokens)``."""
    return NEXT_TOKEN_LOSS.check(fn)
