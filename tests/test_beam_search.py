"""Beam search against an exhaustive search on a tiny vocabulary, its greedy limit and tie rule, and a
hand-worked case where keeping two beams finds a likelier sequence than greedy decoding."""

import math

import pytest
import torch

from course_utils.beam_search import beam_search, exhaustive_search
from course_utils.sampling import generate


class _Table:
    """Logits from a seeded table indexed by the last two tokens: a tiny model with some memory."""

    def __init__(self, d_vocab, seed):
        self.table = 2 * torch.randn(d_vocab, d_vocab, d_vocab, generator=torch.Generator().manual_seed(seed))

    def __call__(self, ids):
        return self.table[ids[-2], ids[-1]] if len(ids) > 1 else self.table[0, ids[-1]]


@pytest.mark.parametrize("eos_id", [None, 2])
def test_full_width_equals_exhaustive_search(eos_id):
    model = _Table(3, seed=0)
    best, score = exhaustive_search(model, [1], 4, 3, eos_id)
    got, got_score = beam_search(model, [1], 4, beam_width=27, eos_id=eos_id)
    assert got == best and math.isclose(got_score, score, abs_tol=1e-12)


def test_width_one_is_greedy_and_two_beams_beat_greedy_on_a_hand_worked_case():
    model = _Table(4, seed=1)
    assert beam_search(model, [0], 5, 1)[0] == generate(model, [0], 5, temperature=0.0)
    # token 0 then: A (p .6) is followed by a flat row (best next .34); B (p .4) by a sure token (.97)
    rows = {(0,): [0.0, 0.6, 0.4], (0, 1): [0.33, 0.33, 0.34], (0, 2): [0.97, 0.02, 0.01]}

    def hand(ids):
        return torch.tensor(rows[tuple(ids.tolist())], dtype=torch.float64).log()

    greedy, greedy_score = beam_search(hand, [0], 2, 1)
    beams, beams_score = beam_search(hand, [0], 2, 2)
    assert greedy == [0, 1, 2] and math.isclose(greedy_score, math.log(0.6 * 0.34))
    assert beams == [0, 2, 0] and math.isclose(beams_score, math.log(0.4 * 0.97))


def test_ties_go_to_the_candidate_met_first_and_finished_beams_stay():
    def flat(ids):  # every sequence equally likely
        return torch.zeros(3)

    def eos_first(ids):  # eos (0) is always likeliest
        return torch.tensor([5.0, 0.0, 0.0])

    assert beam_search(flat, [1], 3, 2) == ([1, 0, 0, 0], pytest.approx(3 * math.log(1 / 3)))
    assert beam_search(eos_first, [1], 4, 2, eos_id=0)[0] == [1, 0]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="beam_width"):
        beam_search(_Table(3, 0), [1], 2, 0)
    with pytest.raises(ValueError, match="prompt"):
        beam_search(_Table(3, 0), [], 2, 1)
    with pytest.raises(ValueError, match="too many"):
        exhaustive_search(_Table(3, 0), [1], 20, 3)
    with pytest.raises(ValueError, match="next_token_logits"):
        beam_search(lambda ids: 3.0, [1], 2, 1)
