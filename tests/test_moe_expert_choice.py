"""Expert-choice routing: a worked example, the layer against a loop over (expert, token) pairs written
from the paper's definition, the equal work per expert, and bad input."""

import pytest
import torch

from course_utils.moe.layer import SwiGLU
from course_utils.moe.expert_choice import expert_choice, expert_choice_routing


def test_worked_example():
    logits = torch.tensor([[2.0, 1.0], [1.0, 2.0], [1.0, 1.0]]).log()  # probabilities 2/3 1/3, 1/3 2/3, 1/2 1/2
    gates, tokens = expert_choice_routing(logits, 1.0)  # capacity ceil(1.0 · 3 / 2) = 2
    assert tokens.tolist() == [[0, 2], [1, 2]]
    torch.testing.assert_close(gates, torch.tensor([[2 / 3, 1 / 2], [2 / 3, 1 / 2]]))


@pytest.mark.parametrize("factor", [0.5, 1.0, 2.0])
def test_layer_equals_the_definition_and_every_expert_does_equal_work(factor):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(24, 6, generator=gen, dtype=torch.float64)
    W_router = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    torch.manual_seed(0)
    experts = [SwiGLU(6, 8, init_std=0.5).double() for _ in range(4)]
    probs = torch.softmax(x @ W_router, dim=-1)
    capacity = int(torch.tensor(factor * 24 / 4).ceil())
    expected = torch.zeros_like(x)
    for e in range(4):  # the definition: expert e keeps the capacity tokens with the largest probs[:, e]
        for t in sorted(range(24), key=lambda t: -probs[t, e])[:capacity]:
            expected[t] += probs[t, e] * experts[e](x[t : t + 1])[0]
    with torch.no_grad():
        torch.testing.assert_close(expert_choice(x, W_router, experts, factor), expected.detach())
    gates, tokens = expert_choice_routing(x @ W_router, factor)
    assert tokens.shape == (4, capacity) and all(len(set(row.tolist())) == capacity for row in tokens)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="capacity_factor"):
        expert_choice_routing(torch.zeros(4, 2), 3.0)
    with pytest.raises(ValueError, match="capacity_factor"):
        expert_choice_routing(torch.zeros(4, 2), 0.0)
    with pytest.raises(ValueError, match="W_router"):
        expert_choice(torch.zeros(4, 3), torch.zeros(2, 2), [lambda r: r, lambda r: r], 1.0)
