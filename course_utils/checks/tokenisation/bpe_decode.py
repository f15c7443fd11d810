"""Exercise ``decode_ids(ids, vocab)``: the text of a list of token ids.

Each id is a position in ``vocab``; the pieces are glued with nothing in between, and every ``'</w>'``
(the last one included) becomes a space.
"""

from __future__ import annotations

import random
import re

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.tokenisation._cases import keyed_letters
from course_utils.tokenisation.bpe import EOW, WORKED_CORPUS, build_vocab, decode_ids, encode_word, train_bpe


def decode_cases(seed: int) -> list[Case]:
    """The ids of a few worked-corpus words under the 5 worked merges (the third list is seeded: on seed 0
    three corpus words; on any other seed, the hidden ones, 2-4 words of 1-7 letters drawn from the corpus's
    letters, too many to list in a table, where three corpus words gave only 27 lists)."""
    rng = random.Random(seed)
    merges = train_bpe(WORKED_CORPUS, 5)
    vocab = build_vocab(WORKED_CORPUS, merges)
    seeded = [rng.choice(["widest", "lower", "newest"]) for _ in range(3)]
    if seed != 0:
        letters = sorted({c for word in WORKED_CORPUS for c in word})
        seeded = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 7))) for _ in range(rng.randint(2, 4))]
    cases = []
    for words in (["lowest", "newer"], ["low"], seeded):
        ids = [vocab.index(p) for w in words for p in encode_word(w, merges)]
        cases.append(Case(f"ids of {' '.join(words)!r}", (ids, vocab)))
    return cases


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("drops </w>", "'</w>' marks the end of a word: turn it into a space, don't delete it")
def decode_dropping_eow(ids, vocab):
    return "".join(vocab[i] for i in ids).replace(EOW, "")


@bank.mistake("spaces between pieces", "glue the pieces directly (''.join): spaces come only from '</w>'")
def decode_with_spaces_between(ids, vocab):
    return " ".join(vocab[i] for i in ids).replace(EOW, " ")


@bank.mistake("strips the last space", "keep the final space: the last '</w>' decodes to ' ' too ('lowest ')")
def decode_stripping_last_space(ids, vocab):
    return decode_ids(ids, vocab).rstrip(" ")


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("piece by piece")
def decode_piece_by_piece(ids, vocab):
    text = ""
    for i in ids:
        text += vocab[i].replace(EOW, " ")
    return text


@bank.alternative("map and join")
def decode_with_map(ids, vocab):
    return "".join(map(vocab.__getitem__, ids)).replace(EOW, " ")


@bank.alternative("regex substitution")
def decode_with_regex(ids, vocab):
    return re.sub(re.escape(EOW), " ", "".join([vocab[i] for i in ids]))


DECODE_IDS = Exercise(
    name="bpe_decode",
    reference=decode_ids,
    cases=keyed_letters(decode_cases),
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Each id is a position in the vocabulary list: look every id up to get its piece.",
        "Glue the pieces together with nothing in between; the end-of-word marker is what becomes "
        "a space, the last one included.",
    ],
    tolerance="exact",
)
EXERCISES = {DECODE_IDS.name: DECODE_IDS}


def check_bpe_decode(fn):
    """Check ``decode_ids(ids, vocab)``."""
    return DECODE_IDS.check(fn)
