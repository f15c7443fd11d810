"""sae_diagnostics: L0, fraction of variance explained and dead latents, on a hand-computed example
and on numpy float64 arithmetic for a trained SAE."""

from __future__ import annotations

import pytest
import torch

from course_utils.superposition.sparse_autoencoder import SparseAutoencoder, hidden_activation_sampler, sae_diagnostics, train_sparse_autoencoder
from course_utils.superposition.toy_models import train_sweep


def hand_sae() -> SparseAutoencoder:
    sae = SparseAutoencoder(d_in=2, d_sae=3, seed=0)
    with torch.no_grad():
        sae.W_enc.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
        sae.b_enc.zero_()
        sae.b_dec.zero_()
        sae.W_dec.copy_(torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))  # row 0 is used as [1, 0]: unit norm
    return sae


def test_worked_example():
    h = torch.tensor([[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0], [3.0, 1.0]])
    # acts = ReLU(h @ W_enc) = [[1,0,0], [0,2,0], [0,0,0], [3,1,0]]: 1 + 1 + 0 + 2 active -> L0 = 1
    # h' = acts @ unit rows = h except input 2 (rebuilt as 0): squared error 2
    # Σ‖h − mean‖² with mean (0.75, 0.5): 0.3125 + 2.8125 + 5.3125 + 5.3125 = 13.75 -> 1 − 2/13.75 = 47/55
    d = sae_diagnostics(hand_sae(), h)
    assert d.l0 == 1.0
    assert d.variance_explained == pytest.approx(47 / 55, abs=1e-6)
    assert d.dead.tolist() == [False, False, True] and d.n_dead == 1


def test_matches_numpy_on_a_trained_sae():
    model, _ = train_sweep(20, 5, [0.99], importance=0.7 ** torch.arange(20.0), steps=300, batch_size=256, seed=0)
    sample = hidden_activation_sampler(model, 0)
    sae = SparseAutoencoder(d_in=5, d_sae=40, seed=0)
    train_sparse_autoencoder(sae, sample, steps=200, batch_size=256, l1=0.1, seed=0)
    h = sample(2048, torch.Generator().manual_seed(1))
    d = sae_diagnostics(sae, h)
    with torch.no_grad():
        acts, h_hat = sae(h)
    hn, hhn, an = (t.detach().double().numpy() for t in (h, h_hat, acts))
    assert d.l0 == pytest.approx((an > 0).sum(axis=1).mean())
    fve = 1 - ((hn - hhn) ** 2).sum() / ((hn - hn.mean(axis=0)) ** 2).sum()
    assert d.variance_explained == pytest.approx(fve, abs=1e-5)
    assert d.dead.tolist() == (~(an > 0).any(axis=0)).tolist()
    assert 0 < d.l0 < 40 and 0 < d.variance_explained <= 1


def test_bad_input_names_the_argument():
    sae = hand_sae()
    with pytest.raises(TypeError, match="sae"):
        sae_diagnostics(torch.nn.Linear(2, 3), torch.ones(4, 2))
    with pytest.raises(ValueError, match="h"):
        sae_diagnostics(sae, torch.ones(4, 3))
    with pytest.raises(ValueError, match="h"):
        sae_diagnostics(sae, torch.ones(1, 2))
    with pytest.raises(ValueError, match="h must vary"):
        sae_diagnostics(sae, torch.ones(4, 2))
    with pytest.raises(ValueError, match="h"):
        sae_diagnostics(sae, torch.tensor([[float("nan"), 0.0], [1.0, 1.0]]))
