"""Reading a built ``Decoder`` back into categories: equal to the formula counter (itself tested against
``transformers`` models) category by category, for every preset, on the meta device."""

import pytest
import torch
from torch import nn

from course_utils.counting import parameters as counting
from course_utils.counting.decoder import Decoder, count_by_category

CONFIGS = {
    **counting.PRESETS,
    "plain, no biases, no norms, no positions": counting.GPT2_SMALL.with_(bias=False, norm="none", positions="none"),
    "GeGLU, 2 experts top-1, with biases": counting.GPT2_SMALL.with_(mlp="geglu", n_experts=2, experts_per_token=1),
}


@pytest.mark.parametrize("cfg", CONFIGS.values(), ids=CONFIGS.keys())
def test_categories_equal_the_counter(cfg):
    with torch.device("meta"):
        model = Decoder(cfg)
    assert count_by_category(model) == counting.count_parameters(cfg)


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="model"):
        count_by_category("GPT-2")
    with pytest.raises(ValueError, match="model"):
        count_by_category(nn.Sequential(nn.Linear(2, 2)))
