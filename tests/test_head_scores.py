"""Head scores against hand-built patterns and a brute-force count."""

import pytest
import torch

from course_utils.attention.head_scores import chance_delimiter_share, delimiter_scores
from course_utils.masking import causal_mask
from course_utils.softmax import masked_softmax


def test_a_head_that_looks_at_the_last_delimiter_scores_one():
    is_delim = torch.tensor([[True, False, False, True, False]])
    pattern = torch.zeros(1, 2, 5, 5)
    last = [0, 0, 0, 3, 3]  # the latest delimiter at or before each query
    for q, k in enumerate(last):
        pattern[0, 0, q, k] = 1.0
    pattern[0, 1] = torch.eye(5)  # head 1 looks at itself
    scores = delimiter_scores(pattern, is_delim)
    assert scores[0] == 1.0 and scores[1] == pytest.approx(2 / 5)


def test_uniform_causal_attention_scores_chance():
    is_delim = torch.rand(3, 12, generator=torch.Generator().manual_seed(0)) < 0.3
    uniform = masked_softmax(torch.zeros(3, 1, 12, 12), causal_mask(12))
    brute = sum(sum(is_delim[b, : q + 1].tolist()) / (q + 1) for b in range(3) for q in range(12)) / 36
    assert chance_delimiter_share(is_delim) == pytest.approx(brute)
    assert float(delimiter_scores(uniform, is_delim)[0]) == pytest.approx(brute)


def test_bad_shapes_are_named():
    with pytest.raises(ValueError, match="is_delimiter"):
        delimiter_scores(torch.zeros(1, 1, 3, 3), torch.zeros(1, 4, dtype=torch.bool))


def test_top_head_takes_the_highest_score_and_breaks_ties_by_order():
    from course_utils.attention.head_scores import top_head

    assert top_head([torch.tensor([0.1, 0.2]), torch.tensor([0.3, 0.9]), torch.tensor([0.4, 0.0])]) == (1, 1)
    # a tie (within 1e-6) goes to the first in (layer, head) order, whichever side rounding put it on
    assert top_head([torch.tensor([0.1, 0.5 - 1e-7]), torch.tensor([0.5, 0.2])]) == (0, 1)
    assert top_head([torch.tensor([0.1, 0.5 - 1e-7]), torch.tensor([0.5, 0.2])], tie=0.0) == (1, 0)
    with pytest.raises(ValueError, match="scores"):
        top_head([])
    with pytest.raises(ValueError, match="scores"):
        top_head([torch.zeros(2, 2)])
