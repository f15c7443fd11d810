"""A small sparse autoencoder (SAE) that pulls superposed features back out of hidden activations.

Given activations h in m dimensions that secretly are sparse sums of n > m feature directions, the
SAE learns an overcomplete dictionary: acts = ReLU((h − b_dec) W_enc + b_enc), h' = acts W_dec + b_dec,
with unit-norm rows of W_dec, trained on ‖h − h'‖² + l1 · Σ acts. Covers the forward pass, the loss
and one training step as functions (``sae_forward``, ``sae_loss``, ``sae_training_step``, notebook 06's
exercises), training one SAE, its diagnostics on held-out activations (L0, fraction of variance
explained, dead latents) and scoring which true directions its dictionary found (cosine above a
threshold). Leaves out resampling dead latents, top-k SAEs and transcoders.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from jaxtyping import Float
from torch import Tensor, nn
from course_utils.env.progress import progress_bar

from course_utils.env.threads import torch_threads
from course_utils.validate import float_tensor, int_in, integer, non_negative_number, positive_int, positive_number


class SparseAutoencoder(nn.Module):
    """``SparseAutoencoder(d_in=5, d_sae=40)``: encode to d_sae non-negative latents, decode back to d_in."""

    def __init__(self, d_in: int, d_sae: int, seed: int | None = None):
        super().__init__()
        positive_int("d_in", d_in)
        positive_int("d_sae", d_sae)
        gen = None if seed is None else torch.Generator().manual_seed(integer("seed", seed))
        self.W_enc = nn.Parameter(nn.init.kaiming_uniform_(torch.empty(d_in, d_sae), generator=gen))
        self.W_dec = nn.Parameter(self.W_enc.detach().T.clone())  # (d_sae, d_in), tied at the start
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.b_dec = nn.Parameter(torch.zeros(d_in))

    def directions(self) -> Float[Tensor, "d_sae d_in"]:
        """The dictionary: one unit vector per latent."""
        return _unit_rows(self.W_dec)

    def encode(self, h: Float[Tensor, "batch d_in"]) -> Float[Tensor, "batch d_sae"]:
        return _encode(h, self.W_enc, self.b_enc, self.b_dec)

    def forward(self, h: Float[Tensor, "batch d_in"]) -> tuple[Tensor, Tensor]:
        return sae_forward(h, self.W_enc, self.b_enc, self.W_dec, self.b_dec)


def _unit_rows(W_dec: Tensor) -> Tensor:
    return W_dec / W_dec.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (d_sae, d_in), each row of length 1


def _encode(h: Tensor, W_enc: Tensor, b_enc: Tensor, b_dec: Tensor) -> Tensor:
    return torch.relu((h - b_dec) @ W_enc + b_enc)  # (batch, d_sae)


def sae_forward(
    h: Float[Tensor, "batch d_in"],
    W_enc: Float[Tensor, "d_in d_sae"],
    b_enc: Float[Tensor, "d_sae"],
    W_dec: Float[Tensor, "d_sae d_in"],
    b_dec: Float[Tensor, "d_in"],
) -> tuple[Float[Tensor, "batch d_sae"], Float[Tensor, "batch d_in"]]:
    """(acts, h_hat): acts = ReLU((h − b_dec) W_enc + b_enc), h_hat = acts · unit_rows(W_dec) + b_dec.

    With ``W_enc = I``, zero biases and ``W_dec = 2I``: ``[[1., -1.]]`` -> acts ``[[1., 0.]]``, h_hat ``[[1., 0.]]``.
    """
    acts = _encode(h, W_enc, b_enc, b_dec)
    return acts, acts @ _unit_rows(W_dec) + b_dec  # (batch, d_sae), (batch, d_in)


def sae_loss(
    h: Float[Tensor, "batch d_in"], acts: Float[Tensor, "batch d_sae"], h_hat: Float[Tensor, "batch d_in"], l1: float
) -> Float[Tensor, ""]:
    """Mean over the batch of ‖h − h_hat‖² + l1 · ‖acts‖₁ (acts are non-negative, so ‖acts‖₁ = Σ acts).

    ``sae_loss([[1., 2.]], [[3., 0., 1.]], [[0., 2.]], l1=0.5)`` -> ``1 + 0.5 · 4 = 3``.
    """
    return (h - h_hat).square().sum(dim=-1).mean() + l1 * acts.sum(dim=-1).mean()


def sae_training_step(sae: SparseAutoencoder, optimiser, h: Float[Tensor, "batch d_in"], l1: float) -> Tensor:
    """One step on batch ``h``: forward, ``sae_loss``, clear old gradients, backward, ``optimiser.step()``.

    Returns the loss before the step (detached, 0-d).
    """
    acts, h_hat = sae(h)
    loss = sae_loss(h, acts, h_hat, l1)
    optimiser.zero_grad(set_to_none=True)
    loss.backward()
    optimiser.step()
    return loss.detach()


def train_sparse_autoencoder(
    sae: SparseAutoencoder,
    sample,
    steps: int = 2000,
    batch_size: int = 1024,
    lr: float = 3e-3,
    l1: float = 0.05,
    seed: int = 0,
    progress: bool = False,
) -> Tensor:
    """Fit ``sae`` to batches from ``sample(batch_size, generator)`` -> (batch, d_in); returns the loss history.

    Loss per batch: ``sae_loss``, the mean over the batch of ‖h − h'‖² + l1 · ‖acts‖₁.
    """
    if not callable(sample):
        raise TypeError(
            f"sample must be a callable (batch_size, generator) -> activations, got {type(sample).__name__}"
        )
    positive_int("steps", steps)
    positive_int("batch_size", batch_size)
    positive_number("lr", lr)
    non_negative_number("l1", l1)
    integer("seed", seed)
    gen = torch.Generator(device=sae.W_enc.device).manual_seed(seed)
    optimiser = torch.optim.Adam(sae.parameters(), lr=lr)
    history = torch.empty(steps)
    with torch_threads(1):
        for step in progress_bar(range(steps), desc="sparse autoencoder", disable=not progress):
            history[step] = sae_training_step(sae, optimiser, sample(batch_size, gen), l1)
    return history


@dataclass(frozen=True)
class SAEDiagnostics:
    """How an SAE does on a batch: ``l0`` the mean number of active latents per input,
    ``variance_explained`` 1 − Σ‖h − h'‖² / Σ‖h − mean(h)‖², ``dead`` the latents never active (bool, (d_sae,))."""

    l0: float
    variance_explained: float
    dead: Tensor

    @property
    def n_dead(self) -> int:
        return int(self.dead.sum())


def sae_diagnostics(sae: SparseAutoencoder, h: Float[Tensor, "batch d_in"]) -> SAEDiagnostics:
    """L0, fraction of variance explained and dead latents of ``sae`` on activations ``h`` (use held-out ones).

    A latent is active on an input when its activation is > 0; it is dead when active on none of them.
    ``h`` must be a finite (batch, d_in) tensor with at least two rows that are not all equal.
    """
    if not isinstance(sae, SparseAutoencoder):
        raise TypeError(f"sae must be a SparseAutoencoder, got {type(sae).__name__}")
    h = float_tensor("h", h, "(batch, d_in)", min_dims=2)
    d_in = sae.W_enc.shape[0]
    if h.ndim != 2 or h.shape[1] != d_in or h.shape[0] < 2:
        raise ValueError(f"h must have shape (batch >= 2, d_in={d_in}), got {tuple(h.shape)}")
    with torch.no_grad():
        acts, h_hat = sae(h)  # (batch, d_sae), (batch, d_in)
        total = (h - h.mean(dim=0)).square().sum()
        if total == 0:
            raise ValueError("h must vary across the batch (its variance is zero, so no fraction can be explained)")
        active = acts > 0
        return SAEDiagnostics(
            l0=active.sum(dim=-1).double().mean().item(),
            variance_explained=(1 - (h - h_hat).square().sum() / total).item(),
            dead=~active.any(dim=0),
        )


def recovered_features(
    true_directions: Float[Tensor, "n d"], dictionary: Float[Tensor, "k d"], threshold: float = 0.9
) -> tuple[Tensor, Tensor]:
    """For each true direction, its best cosine with any dictionary row, and whether that beats ``threshold``.

    ``recovered_features(torch.eye(2), torch.tensor([[1., 0.1]]))`` -> ``([0.995, 0.0995], [True, False])``.
    """
    for name, t in (("true_directions", true_directions), ("dictionary", dictionary)):
        float_tensor(name, t, "(rows, d): rows are directions", min_dims=2, finite=False)
        if t.ndim != 2:
            raise ValueError(f"{name} must be a 2-d tensor (rows are directions), got {tuple(t.shape)}")
    if true_directions.shape[1] != dictionary.shape[1]:
        raise ValueError(
            "true_directions and dictionary must have the same width, "
            f"got {true_directions.shape[1]} and {dictionary.shape[1]}"
        )
    a = true_directions / true_directions.norm(dim=1, keepdim=True).clamp_min(1e-12)
    b = dictionary / dictionary.norm(dim=1, keepdim=True).clamp_min(1e-12)
    best = (a @ b.T).max(dim=1).values  # (n,)
    return best, best > threshold


def hidden_activation_sampler(model, instance: int):
    """``sample(batch_size, generator)`` -> hidden activations (batch, n_hidden) of one toy-model instance."""
    int_in("instance", instance, 0, model.n_instances - 1)  # one of the model's n_instances

    def sample(batch_size: int, generator: torch.Generator | None = None) -> Tensor:
        with torch.no_grad():
            return model.hidden(model.generate_batch(batch_size, generator))[:, instance]

    return sample
