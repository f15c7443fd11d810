"""The linear baseline of the toy model of superposition (x' = WᵀW x + b) and the represented-feature count.

Elhage et al.'s central contrast: without the ReLU the model behaves like PCA and keeps at most m features,
whatever the sparsity (checked over five seeds, not one); that the ReLU model superposes at the same
sparsity is checked over seeds in tests/test_06_seeds.py.
"""

from __future__ import annotations

import pytest
import torch

from course_utils.superposition.toy_models import ToyModel, feature_norms, represented_features, toy_model_forward, train_sweep

IMPORTANCE = 0.7 ** torch.arange(20.0)  # notebook 06's setting: feature 0 matters most


def test_linear_forward_is_wtw_x_plus_b_and_relu_forward_clips_it():
    torch.manual_seed(0)
    linear = ToyModel(3, 6, 2, seed=0, relu=False)
    with torch.no_grad():
        linear.b_final.copy_(torch.randn(3, 6))
    x = torch.randn(7, 3, 6)  # negative inputs too, so the ReLU would matter
    by_hand = torch.stack([x[:, i] @ (linear.W[i].T @ linear.W[i]).T + linear.b_final[i] for i in range(3)], dim=1)
    torch.testing.assert_close(linear(x), by_hand)
    assert (by_hand < 0).any()
    relu = ToyModel(3, 6, 2, seed=0)
    with torch.no_grad():
        relu.b_final.copy_(linear.b_final)
    torch.testing.assert_close(relu(x), by_hand.clamp_min(0))
    torch.testing.assert_close(relu(x), toy_model_forward(x, relu.W, relu.b_final))


@pytest.mark.parametrize("seed", range(5))
def test_linear_baseline_keeps_the_five_most_important_features_each_on_its_own_axis(seed):
    """The notebook trains it with the sweep's settings; PCA's answer is reached well before (1,000 steps of 256).
    The ReLU model's count at the same sparsity is checked over seeds in tests/test_06_seeds.py."""
    linear, _ = train_sweep(20, 5, [0.99], importance=IMPORTANCE, steps=1000, batch_size=256, seed=seed, relu=False)
    W = linear.W.detach()[0]
    norms = feature_norms(W)
    # PCA's answer: the five most important features get unit norm, the other fifteen nothing
    torch.testing.assert_close(norms[:5], torch.ones(5), atol=0.02, rtol=0)
    assert norms[5:].max() < 0.1
    torch.testing.assert_close(W[:, :5].T @ W[:, :5], torch.eye(5), atol=0.03, rtol=0)  # orthogonal axes
    assert represented_features(linear.W.detach()).tolist() == [5]


def test_represented_features_worked_example_and_bad_input():
    W = torch.tensor([[[1.0, 0.0, 0.6], [0.0, 0.4, 0.0]], [[0.3, 0.3, 0.3], [0.3, 0.3, 0.3]]])  # (inst=2, hidden=2, feat=3)
    assert represented_features(W).tolist() == [2, 0]  # norms [1, .4, .6] and [.42, .42, .42]
    assert represented_features(W, threshold=0.41).tolist() == [2, 3]
    with pytest.raises(ValueError, match="threshold"):
        represented_features(W, threshold=0.0)
    with pytest.raises(ValueError, match="W"):
        represented_features(torch.ones(3))
    with pytest.raises(TypeError, match="relu"):
        ToyModel(1, 3, 2, relu="no")
