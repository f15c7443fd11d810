"""Exercise ``left_pad_batch(prompts, pad_id)``: prompts of different lengths as one batch, ready to generate.

Required form (stated in the notebook): return ``(ids, mask, positions)``: ``ids`` (batch, pos) long, each
prompt padded with ``pad_id`` on the LEFT to the longest prompt's length; ``mask`` (batch, pos, pos)
torch.bool, True = may attend, causal and never a padding key; ``positions`` (batch, pos) long, counting from
0 at each prompt's first real token, 0 on padding. Compared exactly with the course's
``masking.left_padded_batch``, which is tested to give every prompt the outputs it gets alone, and against
``nn.MultiheadAttention``'s ``key_padding_mask`` and Hugging Face's position convention.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from course_utils import masking
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise


def left_pad_batch(prompts, pad_id):
    """Reference: the course's ``masking.left_padded_batch``."""
    return masking.left_padded_batch(prompts, pad_id)


def _keyed_ids(seed: int):
    """Identity on the public seed; on a hidden one a permutation of the ids 1-30 drawn from random.Random(seed),
    which the grader keys by its secret (0 stays 0: it is the pad id that a real token may equal)."""
    if not seed:
        return list
    renamed = list(range(1, 31))
    random.Random(1_000_003 * seed + 29).shuffle(renamed)
    return lambda prompt: [renamed[t - 1] if t else 0 for t in prompt]


def _pad_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    drawn = [[rng.randint(0, 30) for _ in range(rng.randint(1, 6))] for _ in range(4)]
    ids = _keyed_ids(seed)  # the hand-made prompts' ids; renamed by the grader's key on hidden seeds
    return [
        Case("lengths 4, 2 and 1; token 0 is also pad_id, and the second prompt holds a real 0",
             ([ids([5, 6, 7, 1]), ids([0, 2]), ids([3])], 0)),
        Case("two prompts of the same length (no padding)", ([ids([4, 4, 9]), ids([1, 2, 3])], 0)),
        Case("a single prompt", ([ids([7, 8])], 99)),
        Case(f"4 prompts of lengths {[len(p) for p in drawn]}, pad_id 50", (drawn, 50)),
    ]


def _build(prompts, pad_id, *, side="left", positions_from_padding=False, hide_padding=True):
    """A written-out version with knobs for the mistakes."""
    n = max(len(p) for p in prompts)
    def place(fill, row):
        return fill * (n - len(row)) + row if side == "left" else row + fill * (n - len(row))

    ids = torch.tensor([place([pad_id], list(p)) for p in prompts])
    real = torch.tensor([place([False], [True] * len(p)) for p in prompts])
    positions = (real.cumsum(-1) - 1).clamp_min(0)
    if positions_from_padding:
        positions = torch.arange(n).expand(len(prompts), n)
    mask = masking.causal_mask(n) & (real[:, None, :] if hide_padding else True)
    return ids, mask, positions


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "padded on the right",
    "pad on the LEFT: generation appends after the last column, so every prompt must end there",
)
def _right(prompts, pad_id):
    return _build(prompts, pad_id, side="right")


@bank.mistake(
    "positions count the padding",
    "each prompt's positions start at 0 on its first real token, as if it were alone (padding gets 0)",
)
def _positions_with_padding(prompts, pad_id):
    return _build(prompts, pad_id, positions_from_padding=True)


@bank.mistake(
    "padding keys visible", "no query may attend to a padding key: combine the causal mask with a padding mask"
)
def _padding_visible(prompts, pad_id):
    return _build(prompts, pad_id, hide_padding=False)


@bank.mistake(
    "padding found by its value",
    "a prompt may hold the token pad_id for real: tell padding apart by position (the first pos - len(prompt) "
    "columns), not by comparing ids with pad_id",
)
def _by_value(prompts, pad_id):
    ids, _, _ = _build(prompts, pad_id)
    real = ids != pad_id
    return ids, masking.causal_mask(ids.shape[1]) & real[:, None, :], (real.cumsum(-1) - 1).clamp_min(0)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("lengths and comparisons with arange")
def _arange(prompts, pad_id):
    lengths = torch.tensor([len(p) for p in prompts])
    n = int(lengths.max())
    start = (n - lengths)[:, None]  # (batch, 1): the first real column
    ids = torch.full((len(prompts), n), pad_id)
    for b, p in enumerate(prompts):
        ids[b, n - len(p):] = torch.tensor(p)
    column = torch.arange(n)[None, :]
    real = column >= start
    mask = (column.T >= column) & real[:, None, :]  # (pos, pos) causal, then (batch, pos, pos)
    return ids, mask, (column - start).clamp_min(0)


@bank.alternative("F.pad each prompt, right-pad then flip")
def _flip(prompts, pad_id):
    n = max(len(p) for p in prompts)
    ids = torch.stack([F.pad(torch.tensor(p), (n - len(p), 0), value=pad_id) for p in prompts])
    real = torch.stack([torch.arange(n) < len(p) for p in prompts]).flip(-1)
    positions = torch.stack([F.pad(torch.arange(len(p)), (n - len(p), 0)) for p in prompts])
    return ids, torch.ones(n, n, dtype=torch.bool).tril()[None] & real[:, None, :], positions


@bank.alternative("Python loops over cells")
def _loops(prompts, pad_id):
    n = max(len(p) for p in prompts)
    rows = [[pad_id] * (n - len(p)) + list(p) for p in prompts]
    first = [n - len(p) for p in prompts]
    mask = [[[first[b] <= k <= q for k in range(n)] for q in range(n)] for b in range(len(prompts))]
    positions = [[max(c - first[b], 0) for c in range(n)] for b in range(len(prompts))]
    return torch.tensor(rows), torch.tensor(mask), torch.tensor(positions)


LEFT_PAD_BATCH = Exercise(
    name="left_pad_batch",
    reference=left_pad_batch,
    cases=_pad_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Three things per prompt: how many padding columns go in front of it (the longest length minus its own), "
        "which columns are real, and how far each real column is from the prompt's first token.",
        "A boolean (batch, pos) table of real columns does most of the work: its running count minus one gives the "
        "positions (clamp the padding to 0), and with a key axis inserted it combines with the causal (pos, pos) "
        "lower triangle into the (batch, pos, pos) mask.",
    ],
    tolerance="exact",
)
EXERCISES = {LEFT_PAD_BATCH.name: LEFT_PAD_BATCH}


def check_left_pad_batch(fn):
    """Check a student's ``left_pad_batch(prompts, pad_id)``; it returns (ids, mask, positions)."""
    return LEFT_PAD_BATCH.check(fn)
