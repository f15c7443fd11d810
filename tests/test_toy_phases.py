"""The importance × sparsity phase picture (course_utils.superposition.phases): the exact expected loss and the classifier.

Oracles: the midpoint rule worked by hand (Σ_k ((k + ½)/K)² / K = 1/3 − 1/(12 K²)); the batch loss of
``ToyModel.loss`` on the same grid when every point is equally likely; hand-made weights for each phase.
The trained picture's statements are checked over seeds in tests/test_06_seeds.py.
"""

from __future__ import annotations

import pytest
import torch

from course_utils.superposition.toy_models import ToyModel
from course_utils.superposition.phases import PHASES, expected_loss, extra_feature_phase, input_grid, phase_sweep


def test_input_grid_worked_example_and_probabilities():
    x, weights = input_grid(torch.tensor([0.5]), 1, 2)
    assert x.tolist() == [[0.0], [0.25], [0.75]] and weights.tolist() == [[0.5], [0.25], [0.25]]
    x, weights = input_grid(torch.tensor([0.0, 0.3, 0.99]), 2, 8)  # (81, 2), (81, 3)
    assert x.shape == (81, 2) and weights.shape == (81, 3)
    torch.testing.assert_close(weights.sum(dim=0), torch.ones(3))
    both_zero = (x == 0).all(dim=1)
    torch.testing.assert_close(weights[both_zero][0], torch.tensor([0.0, 0.09, 0.9801]))  # S², independently


def test_expected_loss_of_the_zero_model_is_the_midpoint_rule_by_hand():
    model = ToyModel(3, 2, 1, sparsity=[0.0, 0.5, 0.9], importance=torch.tensor([1.0, 3.0]), seed=0)
    with torch.no_grad():
        model.W.zero_()  # x' = ReLU(0) = 0: the loss is Σ_i I_i E[x_i²]
    K = 8
    second_moment = (1 - model.sparsity) * (1 / 3 - 1 / (12 * K**2))  # midpoint rule for E[x²] on K bins
    torch.testing.assert_close(expected_loss(model, *input_grid(model.sparsity, 2, K)), 4 * second_moment)


def test_expected_loss_equals_the_batch_loss_when_every_grid_point_is_equally_likely():
    model = ToyModel(2, 2, 1, sparsity=0.0, importance=torch.tensor([1.0, 0.5]), seed=1)
    with torch.no_grad():
        model.b_final.copy_(torch.tensor([[-0.1, 0.2], [0.3, -0.2]]))
    x, weights = input_grid(model.sparsity, 2, 4)
    present = (x > 0).all(dim=1)  # S = 0: the points with a zero have probability 0, the 16 others 1/16 each
    torch.testing.assert_close(weights[present], torch.full((16, 2), 1 / 16))
    batch = x[present][:, None, :].expand(-1, 2, -1)
    torch.testing.assert_close(expected_loss(model, x, weights), model.loss(batch))


def test_extra_feature_phase_by_hand_and_bad_input():
    W = torch.tensor([[[0.9, 0.1]], [[0.1, -0.9]], [[0.8, -0.7]], [[0.2, 0.3]]])  # (4, 1, 2)
    assert extra_feature_phase(W).tolist() == [0, 1, 2, 0]
    assert [PHASES[p] for p in extra_feature_phase(W).tolist()][:3] == list(PHASES)
    assert extra_feature_phase(W, threshold=0.25).tolist() == [0, 1, 2, 1]
    with pytest.raises(ValueError, match="W"):
        extra_feature_phase(torch.ones(3, 2, 2))
    with pytest.raises(ValueError, match="threshold"):
        extra_feature_phase(W, threshold=0.0)


def test_phase_sweep_dense_features_go_to_the_more_important_one():
    sweep = phase_sweep([0.1, 10.0], [1.0], steps=200)
    assert sweep.phases.tolist() == [[0, 1]] and sweep.W.shape == (1, 2, 1, 2) and sweep.loss.shape == (1, 2)
    # the kept feature is reconstructed perfectly, the dropped one costs its importance × variance 1/12 (less
    # the midpoint rule's 1/(12·64)): 0.1 × that with r = 0.1, 1 × that with r = 10
    variance = 1 / 3 - 1 / (12 * 64) - 1 / 4
    torch.testing.assert_close(sweep.loss, torch.tensor([[0.1 * variance, variance]]), atol=2e-4, rtol=0)


@pytest.mark.parametrize("kwargs", [{"relative_importance": [0.0, 1.0]}, {"density": [0.0]}, {"density": [1.5]},
                                    {"relative_importance": [[1.0]]}])
def test_phase_sweep_bad_grid_names_the_argument(kwargs):
    args = {"relative_importance": [1.0], "density": [0.5], **kwargs}
    with pytest.raises(ValueError, match="relative_importance|density"):
        phase_sweep(**args)
