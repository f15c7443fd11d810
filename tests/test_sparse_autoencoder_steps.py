"""The Core behind notebook 06's sparse-autoencoder exercises (``sae_forward``, ``sae_loss``,
``sae_training_step``) against oracles: hand-worked values, and the loss written out independently
with torch's own optimisers. ``tests/test_checks.py`` covers the checks themselves (mistakes fail,
alternatives pass); notebook 07's whole-layer exercise is held against ``transformers``' Mixtral block
in ``tests/test_moe.py``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from course_utils.superposition.sparse_autoencoder import SparseAutoencoder, sae_forward, sae_loss, sae_training_step


# -- 06: the SAE's forward, loss and step ----------------------------------------------------------
def test_sae_forward_and_loss_by_hand():
    zeros = torch.zeros(2)
    acts, h_hat = sae_forward(torch.tensor([[1.0, -1.0]]), torch.eye(2), zeros, 2 * torch.eye(2), zeros)
    assert acts.tolist() == [[1.0, 0.0]] and h_hat.tolist() == [[1.0, 0.0]]  # W_dec's rows scaled to length 1
    acts, h_hat = sae_forward(torch.tensor([[3.0, 1.0]]), torch.eye(2), torch.tensor([0.0, -1.0]),
                              torch.tensor([[0.0, 3.0], [4.0, 0.0]]), torch.tensor([1.0, 1.0]))
    # (h - b_dec) = [2, 0]; + b_enc = [2, -1]; ReLU -> [2, 0]; unit rows [[0, 1], [1, 0]]; 2·[0, 1] + b_dec = [1, 3]
    assert acts.tolist() == [[2.0, 0.0]] and h_hat.tolist() == [[1.0, 3.0]]
    loss = sae_loss(torch.tensor([[1.0, 2.0], [0.0, 0.0]]), torch.tensor([[3.0, 0.0, 1.0], [0.0, 2.0, 0.0]]),
                    torch.tensor([[0.0, 2.0], [0.0, 2.0]]), 0.5)
    assert loss.item() == pytest.approx(((1 + 0.5 * 4) + (4 + 0.5 * 2)) / 2)  # per input, then the batch mean


def test_sae_module_forward_is_sae_forward():
    sae = SparseAutoencoder(3, 8, seed=1)
    h = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    for ours, theirs in zip(sae(h), sae_forward(h, sae.W_enc, sae.b_enc, sae.W_dec, sae.b_dec)):
        assert torch.equal(ours, theirs)


@pytest.mark.parametrize("optimiser_class", [torch.optim.SGD, torch.optim.Adam])
def test_sae_training_step_against_torch_optimisers(optimiser_class):
    """Three steps of ``sae_training_step`` equal three steps of the optimiser on the loss written out with
    F.mse_loss and F.normalize, from a copy of the same SAE."""
    ours, oracle = SparseAutoencoder(4, 10, seed=0).double(), SparseAutoencoder(4, 10, seed=0).double()
    opt_ours, opt_oracle = optimiser_class(ours.parameters(), lr=0.05), optimiser_class(oracle.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1)
    for _ in range(3):
        h = torch.randn(16, 4, generator=gen, dtype=torch.float64)
        loss = sae_training_step(ours, opt_ours, h, 0.2)
        acts = F.relu((h - oracle.b_dec) @ oracle.W_enc + oracle.b_enc)
        h_hat = acts @ F.normalize(oracle.W_dec, dim=-1) + oracle.b_dec
        expected = F.mse_loss(h_hat, h, reduction="sum") / 16 + 0.2 * acts.abs().sum() / 16
        opt_oracle.zero_grad()
        expected.backward()
        opt_oracle.step()
        assert loss.item() == pytest.approx(expected.item(), rel=1e-12) and not loss.requires_grad
    for (name, p), q in zip(ours.named_parameters(), oracle.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-10, atol=1e-12, msg=name)
