"""Anthropic's toy model of superposition (Elhage et al., 2022), many instances trained at once.

n features are squeezed through m < n hidden dimensions and read back out: h = W x, x' = ReLU(Wᵀ h + b),
trained to minimise the importance-weighted squared error. Each feature is independently zero with
probability ``sparsity`` and otherwise uniform on [0, 1]. Every instance has its own W, b, sparsity and
importance; all of them live in one batched tensor (W: (inst, hidden, feat)) and train in one loop,
as ARENA 1.5.4 does. Covers the forward pass, the loss, training, and reading the result (feature
norms, WᵀW, feature dimensionality), and the linear baseline x' = WᵀW x + b (``relu=False``), which
never superposes. Leaves out correlated features and the privileged-basis variant.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor, nn
from course_utils.env.progress import progress_bar

from course_utils.env.threads import torch_threads
from course_utils.validate import float_tensor, positive_int, positive_number


def _forward(x: Tensor, W: Tensor, b_final: Tensor, relu: bool = True) -> Tensor:
    hidden = x.transpose(0, 1) @ W.transpose(1, 2)  # (inst, batch, hidden): one product per instance
    out = (hidden @ W).transpose(0, 1) + b_final  # (batch, inst, feat)
    return torch.relu(out) if relu else out


def _loss(x: Tensor, x_hat: Tensor, importance: Tensor) -> Tensor:
    return (importance * (x - x_hat).square()).sum(dim=-1).mean(dim=0)


def _batched(name: str, t, layout: str, ndim: int) -> Tensor:
    """``t`` if it is a floating-point tensor with exactly ``ndim`` dims; its values are checked later."""
    t = float_tensor(name, t, layout, min_dims=ndim, finite=False)
    if t.ndim != ndim:
        raise ValueError(f"{name} must have shape {layout}, got shape {tuple(t.shape)}")
    return t


def toy_model_forward(
    x: Float[Tensor, "batch inst feat"], W: Float[Tensor, "inst hidden feat"], b_final: Float[Tensor, "inst feat"]
) -> Float[Tensor, "batch inst feat"]:
    """ReLU(Wᵀ W x + b) for every instance. With W = [[1, 0]] (one instance, 1 hidden, 2 features) and
    b = 0: ``x = [[[0.5, 0.7]]]`` -> ``[[[0.5, 0.0]]]`` (feature 1 has no direction, so it is lost).

    The three shapes must agree (x's and b_final's (inst, feat) are W's) and hold finite values."""
    W = _batched("W", W, "(inst, hidden, feat)", 3)
    x = _batched("x", x, "(batch, inst, feat)", 3)
    b_final = _batched("b_final", b_final, "(inst, feat)", 2)
    inst, _, feat = W.shape
    if x.shape[1:] != (inst, feat):
        raise ValueError(
            f"x must have shape (batch, inst={inst}, feat={feat}) to match W {tuple(W.shape)}, "
            f"got shape {tuple(x.shape)}"
        )
    if b_final.shape != (inst, feat):
        raise ValueError(
            f"b_final must have shape (inst={inst}, feat={feat}) to match W {tuple(W.shape)}, "
            f"got shape {tuple(b_final.shape)}"
        )
    for name, t in (("x", x), ("W", W), ("b_final", b_final)):
        float_tensor(name, t)  # shapes first, then values
    return _forward(x, W, b_final)


def importance_weighted_loss(
    x: Float[Tensor, "batch inst feat"], x_hat: Float[Tensor, "batch inst feat"], importance: Float[Tensor, "inst feat"]
) -> Float[Tensor, "inst"]:
    """Per instance: the mean over the batch of Σ_features importance · (x − x')².

    ``importance_weighted_loss(ones(1,1,2), zeros(1,1,2), tensor([[1., .5]]))`` -> ``[1.5]``.
    x and x_hat must have the same shape, importance x's (inst, feat); all finite.
    """
    x = _batched("x", x, "(batch, inst, feat)", 3)
    x_hat = float_tensor("x_hat", x_hat, "(batch, inst, feat)", finite=False)
    importance = float_tensor("importance", importance, "(inst, feat)", finite=False)
    if x_hat.shape != x.shape:
        raise ValueError(
            f"x_hat must have the shape of x {tuple(x.shape)} (batch, inst, feat), got shape {tuple(x_hat.shape)}"
        )
    if importance.shape != x.shape[1:]:
        raise ValueError(
            f"importance must have shape (inst, feat) = {tuple(x.shape[1:])} to match x, "
            f"got shape {tuple(importance.shape)}"
        )
    for name, t in (("x", x), ("x_hat", x_hat), ("importance", importance)):
        float_tensor(name, t)  # shapes first, then values
    return _loss(x, x_hat, importance)


def _per_instance(name: str, value, n_instances: int, n_features: int | None) -> Tensor:
    t = torch.as_tensor(value, dtype=torch.float32)
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite")
    shape = (n_instances,) if n_features is None else (n_instances, n_features)
    try:
        return t.expand(shape).clone()
    except RuntimeError:
        raise ValueError(f"{name} must broadcast to {shape}, got shape {tuple(t.shape)}") from None


class ToyModel(nn.Module):
    """``n_instances`` independent toy models in one module; ``ToyModel(8, 5, 2, sparsity=0.9)``.

    ``sparsity`` (each in [0, 1)) broadcasts to (inst,), ``importance`` (positive) to (inst, feat).
    W starts Xavier-normal per instance (from ``seed`` if given, else torch's global generator), b at zero.
    ``relu=False`` gives the linear baseline x' = WᵀW x + b, otherwise identical.
    """

    def __init__(
        self,
        n_instances: int,
        n_features: int,
        n_hidden: int,
        sparsity=0.0,
        importance=1.0,
        seed: int | None = None,
        relu: bool = True,
    ):
        super().__init__()
        if not isinstance(relu, bool):
            raise TypeError(f"relu must be True or False, got {type(relu).__name__}")
        self.relu = relu
        for name, value in (("n_instances", n_instances), ("n_features", n_features), ("n_hidden", n_hidden)):
            positive_int(name, value)
        sparsity = _per_instance("sparsity", sparsity, n_instances, None)
        if ((sparsity < 0) | (sparsity >= 1)).any():
            raise ValueError(
                f"sparsity must lie in [0, 1) (1 would mean features are never present), got {sparsity.tolist()}"
            )
        importance = _per_instance("importance", importance, n_instances, n_features)
        if (importance <= 0).any():
            raise ValueError("importance must be positive")
        self.n_instances, self.n_features, self.n_hidden = n_instances, n_features, n_hidden
        self.register_buffer("sparsity", sparsity)
        self.register_buffer("importance", importance)
        gen = None if seed is None else torch.Generator().manual_seed(seed)
        self.W = nn.Parameter(nn.init.xavier_normal_(torch.empty(n_instances, n_hidden, n_features), generator=gen))
        self.b_final = nn.Parameter(torch.zeros(n_instances, n_features))

    def forward(self, x: Float[Tensor, "batch inst feat"]) -> Float[Tensor, "batch inst feat"]:
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[1:] != (self.n_instances, self.n_features):
            raise ValueError(
                f"x must have shape (batch, n_instances={self.n_instances}, n_features={self.n_features}), "
                f"got {getattr(x, 'shape', type(x).__name__)}"
            )
        return _forward(x, self.W, self.b_final, self.relu)  # the parameters' shapes are the module's own

    def hidden(self, x: Float[Tensor, "batch inst feat"]) -> Float[Tensor, "batch inst hidden"]:
        """The m-dimensional code h = W x that the features are squeezed into."""
        return torch.einsum("ihf,bif->bih", self.W, x)

    def generate_batch(
        self, batch_size: int, generator: torch.Generator | None = None
    ) -> Float[Tensor, "batch inst feat"]:
        """Sparse features: zero with probability ``sparsity``, else uniform on [0, 1].

        One uniform draw u per entry does both jobs: present iff u > S, and then (u − S) / (1 − S) is uniform.
        """
        u = torch.rand(batch_size, self.n_instances, self.n_features, generator=generator, device=self.W.device)
        return u.sub_(self.sparsity[:, None]).div_(1.0 - self.sparsity[:, None]).clamp_min_(0.0)  # in place: no copies

    def loss(self, x: Float[Tensor, "batch inst feat"]) -> Float[Tensor, "inst"]:
        return _loss(x, self(x), self.importance)  # self(x) checked x's shape


def train_toy_models(
    model: ToyModel, steps: int = 2000, batch_size: int = 1024, lr: float = 1e-2, seed: int = 0, progress: bool = False
) -> Float[Tensor, "steps inst"]:
    """Adam on the summed per-instance losses (instances do not interact); returns the loss history.

    Seeds its own generator, so ``train_toy_models(ToyModel(...), seed=0)`` is reproducible on a fixed
    machine. The learning rate decays as a cosine to a hundredth of ``lr``. Runs single-threaded on the CPU.
    The defaults train notebook 06's sweeps to convergence: as low a loss as Elhage et al.'s settings (AdamW,
    lr 1e-3 constant, batch 1024, 10,000 steps) in a fifth of the steps (benchmarks/RESULTS_superposition.md).
    """
    positive_int("steps", steps)
    positive_int("batch_size", batch_size)
    gen = torch.Generator(device=model.W.device).manual_seed(seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=steps, eta_min=lr / 100)
    history = torch.empty(steps, model.n_instances)
    with torch_threads(1):  # toy-sized tensors gain nothing from more threads
        for step in progress_bar(range(steps), desc="toy models", disable=not progress):
            loss = model.loss(model.generate_batch(batch_size, gen))  # (inst,)
            optimiser.zero_grad(set_to_none=True)
            loss.sum().backward()
            optimiser.step()
            schedule.step()
            history[step] = loss.detach()
    return history


def train_sweep(
    n_features: int,
    n_hidden: int,
    sparsity,
    importance=1.0,
    steps: int = 2000,
    batch_size: int = 1024,
    lr: float = 1e-2,
    seed: int = 0,
    progress: bool = False,
    relu: bool = True,
) -> tuple[ToyModel, Tensor]:
    """One instance per entry of ``sparsity``, built and trained from ``seed``: returns (model, loss history).

    ``train_sweep(5, 2, [0.0, 0.9])`` trains two 5-features-in-2-dimensions models side by side;
    ``relu=False`` trains the linear baseline instead.
    """
    sparsity = torch.as_tensor(sparsity, dtype=torch.float32)
    if sparsity.ndim != 1 or sparsity.numel() < 1:
        raise ValueError(
            f"sparsity must be a 1-d list of values in [0, 1), one per instance, got shape {tuple(sparsity.shape)}"
        )
    model = ToyModel(
        sparsity.numel(), n_features, n_hidden, sparsity=sparsity, importance=importance, seed=seed, relu=relu
    )
    return model, train_toy_models(model, steps, batch_size, lr, seed, progress)


def feature_norms(W: Float[Tensor, "... hidden feat"]) -> Float[Tensor, "... feat"]:
    """‖W_i‖ for every feature i: about 1 if the model represents it, about 0 if it gave up on it."""
    return W.norm(dim=-2)


def represented_features(W: Float[Tensor, "... hidden feat"], threshold: float = 0.5) -> Tensor:
    """How many features have ‖W_i‖ > ``threshold`` (the model gave them a direction), per instance.

    ``represented_features(torch.tensor([[1., 0., .6]]))`` -> ``tensor(2)``; shape ``W.shape[:-2]``.
    """
    W = float_tensor("W", W, "(..., hidden, feat)", min_dims=2)
    positive_number("threshold", threshold)
    return (W.norm(dim=-2) > threshold).sum(dim=-1)


def interference(W: Float[Tensor, "... hidden feat"]) -> Float[Tensor, "... feat feat"]:
    """WᵀW: the diagonal is each feature's squared norm, off-diagonal entries how much features overlap."""
    return W.transpose(-1, -2) @ W


def feature_dimensionality(W: Float[Tensor, "... hidden feat"], eps: float = 1e-12) -> Float[Tensor, "... feat"]:
    """D_i = ‖W_i‖² / Σ_j (Ŵ_i · W_j)²: the share of a hidden dimension feature i gets (Elhage et al.).

    Equal to ‖W_i‖⁴ / Σ_j (W_i · W_j)². 1 for a feature alone in its direction, 1/2 for an
    antipodal pair, 2/5 for each corner of a pentagon; 0 for a feature with W_i = 0.
    """
    W = float_tensor("W", W, "(..., hidden, feat)", min_dims=2)
    norms = W.norm(dim=-2, keepdim=True)  # (..., 1, feat)
    unit = W / norms.clamp_min(eps)
    overlaps = (unit.transpose(-1, -2) @ W).square().sum(dim=-1)  # (..., feat): Σ_j (Ŵ_i · W_j)²
    return norms.squeeze(-2).square() / overlaps.clamp_min(eps)
