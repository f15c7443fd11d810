"""The importance × sparsity phase picture of the toy model of superposition (Elhage et al. 2022, "phase change").

Two features squeezed into one hidden dimension: feature 0 has importance 1, feature 1 (the "extra" feature)
a relative importance r, and both the same density 1 − S. Trained, each model ends in one of three
arrangements: the extra feature is not represented, it has the dimension to itself, or both features share
it in superposition (pointing opposite ways). Every (r, density) cell is an instance of one ``ToyModel``.
The models are trained on the *expected* loss, summed exactly over a grid of input values (a feature is 0
with probability S, else one of ``n_bins`` bin midpoints of [0, 1]), so no sampling noise blurs the picture
where features are rare. Leaves out more hidden dimensions and the analytic phase boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from jaxtyping import Float
from torch import Tensor

from course_utils.env.threads import torch_threads
from course_utils.superposition.toy_models import ToyModel, feature_norms
from course_utils.validate import float_tensor, positive_int, positive_number

PHASES = ("not represented", "dedicated dimension", "superposition")  # the codes 0, 1, 2 of ``extra_feature_phase``
STARTS = ((1.0, 0.0), (0.0, 1.0), (0.7, -0.7))  # W at the start: feature 0 kept, feature 1 kept, both (opposite)


def input_grid(sparsity: Float[Tensor, "inst"], n_features: int, n_bins: int = 8) -> tuple[Tensor, Tensor]:
    """Every input x on the grid {0, bin midpoints}^n_features and its probability under each instance's sparsity.

    Returns x of shape (points, n_features) and weights of shape (points, inst), each column summing to 1:
    ``input_grid(torch.tensor([0.5]), 1, 2)`` -> ``x = [[0], [.25], [.75]]``, weights ``[[.5], [.25], [.25]]``.
    """
    positive_int("n_features", n_features)
    positive_int("n_bins", n_bins)
    sparsity = float_tensor("sparsity", sparsity, "(inst,)").to(torch.float32)
    if (n_bins + 1) ** n_features > 100_000:
        raise ValueError(f"n_features={n_features} with n_bins={n_bins} gives over 100,000 grid points")
    values = torch.arange(-1, n_bins, device=sparsity.device).add(0.5).div(n_bins).clamp_min(0)  # 0, then midpoints
    x = torch.cartesian_prod(*[values] * n_features).reshape(-1, n_features)  # (points, feat)
    present = (x > 0)[:, None, :]  # (points, 1, feat)
    per_feature = torch.where(present, (1 - sparsity)[None, :, None] / n_bins, sparsity[None, :, None])
    return x, per_feature.prod(dim=-1)  # (points, feat), (points, inst)


def expected_loss(model: ToyModel, x: Tensor, weights: Tensor) -> Float[Tensor, "inst"]:
    """Σ over the grid of probability × Σ_i I_i (x_i − x'_i)²: each instance's expected loss (``input_grid``)."""
    batch = x[:, None, :].expand(-1, model.n_instances, -1)  # (points, inst, feat)
    error = (model.importance * (batch - model(batch)).square()).sum(dim=-1)  # (points, inst)
    return (weights * error).sum(dim=0)


def extra_feature_phase(W: Float[Tensor, "... 1 2"], threshold: float = 0.5) -> Tensor:
    """0 if ‖W_1‖ ≤ threshold (extra feature not represented), 1 if only W_1 is longer (dedicated dimension),
    2 if both are (superposition). ``extra_feature_phase(torch.tensor([[.9, -.8]]))`` -> ``tensor(2)``."""
    W = float_tensor("W", W, "(..., 1, 2)", min_dims=2)
    if W.shape[-2:] != (1, 2):
        raise ValueError(f"W must have shape (..., 1, 2): one hidden dimension, two features; got {tuple(W.shape)}")
    positive_number("threshold", threshold)
    kept = feature_norms(W) > threshold  # (..., 2)
    return torch.where(kept[..., 1], torch.where(kept[..., 0], 2, 1), 0)


@dataclass(frozen=True)
class PhaseSweep:
    """One trained model per cell: ``phases`` (density, importance) codes into ``PHASES``; ``W`` (…, 1, 2)."""

    relative_importance: Tensor  # (n_importance,)
    density: Tensor  # (n_density,)
    phases: Tensor  # (n_density, n_importance)
    W: Tensor  # (n_density, n_importance, 1, 2)
    loss: Tensor  # (n_density, n_importance): expected loss of the model kept


def phase_sweep(relative_importance, density, steps: int = 400, lr: float = 2e-2, n_bins: int = 8, seed: int = 0):
    """Train 2-features-in-1-dimension models over a grid of relative importance × density; returns a PhaseSweep.

    Each cell is trained three times, from each arrangement in ``STARTS`` (plus noise of size 0.05 from
    ``seed``), with Adam on ``expected_loss`` (cosine decay to lr/100), and keeps the lowest loss: two weights
    started on one side of zero rarely cross it, so one start alone can stop in a worse arrangement.
    ``phase_sweep([0.1, 10], [1.0]).phases`` -> ``tensor([[0, 1]])``.
    """
    importance = float_tensor("relative_importance", torch.as_tensor(relative_importance, dtype=torch.float32), "(n,)")
    density = float_tensor("density", torch.as_tensor(density, dtype=torch.float32), "(n,)")
    if importance.ndim != 1 or density.ndim != 1 or (importance <= 0).any() or ((density <= 0) | (density > 1)).any():
        raise ValueError("relative_importance must be a 1-d list of positive numbers and density one in (0, 1]")
    positive_int("steps", steps)
    cells = density.numel() * importance.numel()
    r = importance.repeat(density.numel())  # (cells,): importance varies fastest
    model = ToyModel(
        len(STARTS) * cells, 2, 1,
        sparsity=(1 - density.repeat_interleave(importance.numel())).repeat(len(STARTS)).clamp_min(0),
        importance=torch.stack([torch.ones(cells), r], dim=-1).repeat(len(STARTS), 1), seed=seed,
    )  # its random W is replaced below
    noise = 0.05 * torch.randn(model.W.shape, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        model.W.copy_(torch.tensor(STARTS).repeat_interleave(cells, dim=0)[:, None, :] + noise)
    x, weights = input_grid(model.sparsity, 2, n_bins)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=steps, eta_min=lr / 100)
    with torch_threads(1):
        for _ in range(steps):
            loss = expected_loss(model, x, weights)  # (starts * cells,)
            optimiser.zero_grad(set_to_none=True)
            loss.sum().backward()
            optimiser.step()
            schedule.step()
        loss = expected_loss(model, x, weights).detach().reshape(len(STARTS), cells)
    best = loss.argmin(dim=0)  # (cells,)
    W = model.W.detach().reshape(len(STARTS), cells, 1, 2)[best, torch.arange(cells)]
    shape = (density.numel(), importance.numel())
    return PhaseSweep(importance, density, extra_feature_phase(W).reshape(shape), W.reshape(*shape, 1, 2),
                      loss.min(dim=0).values.reshape(shape))
