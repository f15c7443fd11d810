"""The balancing experiment: one small MoE trained on a mixture of sub-tasks, three ways.

The toy task (``make_task``/``sample_batch``): each input belongs to one of ``n_tasks`` sub-tasks;
it is the sub-task's centre plus Gaussian noise z, and the target is the sub-task's own linear map
of z. A router can tell the sub-tasks apart from the centre; an expert that serves one sub-task
only needs to learn one map. ``train_moe`` trains an ``MoE`` on it with ``balancing`` one of
``"none"``, ``"aux"`` (the Switch loss) or ``"bias"`` (DeepSeek-V3's selection bias) and records
each expert's share of the assignments at every step. ``specialisation`` tabulates sub-task
against expert. Everything is seeded; the same call gives the same numbers on the same machine.
Leaves out attention, residual streams and language data.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch
from torch import Tensor

from course_utils.moe.layer import MoE
from course_utils.moe.balancing import _load_balancing_loss, load_shares, update_selection_bias
from course_utils.moe.routing import check_capacity_factor, check_experts_and_k
from course_utils.env.threads import torch_threads
from course_utils.validate import integer, one_of

BALANCING = ("none", "aux", "bias")


@dataclass(frozen=True)
class ExperimentConfig:
    """Sizes and training settings of the experiment (defaults run three times in well under a minute)."""

    n_tasks: int = 4
    d_model: int = 16
    d_mlp: int = 16
    n_experts: int = 8
    k: int = 2
    steps: int = 200
    batch: int = 256
    lr: float = 0.01
    alpha: float = 0.05  # weight of the auxiliary loss
    bias_rate: float = 0.002  # DeepSeek-V3's γ
    capacity_factor: float | None = None
    centre_scale: float = 3.0


@dataclass
class Task:
    centres: Tensor  # (n_tasks, d_model)
    maps: Tensor  # (n_tasks, d_model, d_model)


@dataclass
class TrainingRun:
    """What ``train_moe`` returns: the model, per-step shares and losses, and a held-out score."""

    config: ExperimentConfig
    balancing: str
    model: MoE
    shares: Tensor  # (steps, n_experts) share of the assignments per step
    task_loss: list[float] = field(default_factory=list)  # mean squared error per step
    eval_loss: float = float("nan")
    specialisation: Tensor | None = None  # (n_tasks, n_experts) share of each sub-task's assignments


def make_task(cfg: ExperimentConfig, generator: torch.Generator) -> Task:
    """Random sub-task centres (length ``centre_scale``·√d_model on average) and maps (scaled by 1/√d_model)."""
    centres = torch.randn(cfg.n_tasks, cfg.d_model, generator=generator) * cfg.centre_scale
    maps = torch.randn(cfg.n_tasks, cfg.d_model, cfg.d_model, generator=generator) / cfg.d_model**0.5
    return Task(centres, maps)


def sample_batch(task: Task, n: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """(x, y, sub-task id) for n random examples: x = centre + z, y = z @ map of that sub-task."""
    ids = torch.randint(task.centres.shape[0], (n,), generator=generator)
    z = torch.randn(n, task.centres.shape[1], generator=generator)
    x = task.centres[ids] + z
    y = torch.einsum("nd,nde->ne", z, task.maps[ids])  # (n, d_model)
    return x, y, ids


def specialisation(model: MoE, x: Tensor, ids: Tensor, n_tasks: int) -> Tensor:
    """(n_tasks, n_experts): for each sub-task, the share of its assignments that went to each expert."""
    with torch.no_grad():
        routing = model.route(x)
    table = torch.zeros(n_tasks, model.n_experts, dtype=torch.float64)
    table.index_put_(
        (ids.repeat_interleave(model.k), routing.indices.reshape(-1)),
        torch.ones(routing.indices.numel(), dtype=torch.float64),
        accumulate=True,
    )
    return table / table.sum(dim=1, keepdim=True)


def _check_config(cfg: ExperimentConfig, balancing: str, seed: int) -> None:
    one_of("balancing", balancing, BALANCING)
    integer("seed", seed)
    check_experts_and_k(cfg.n_experts, cfg.k)
    check_capacity_factor(cfg.capacity_factor)


def train_moe(cfg: ExperimentConfig, balancing: str, seed: int = 0, progress=None, device=None) -> TrainingRun:
    """Train a fresh ``MoE`` on the toy task; the task and the initial weights depend only on ``seed``.

    Everything random is drawn from local CPU generators seeded from ``seed`` (the same numbers on any
    device); torch's global random state is neither used nor changed. ``device`` (default the CPU) is
    where the model trains; the returned run's shares and tables are on the CPU.

    ``progress`` is an optional tqdm-like bar to advance once per step.
    """
    _check_config(cfg, balancing, seed)
    with torch_threads(1):  # the toy's matrices are far too small to gain from threads
        return _train(cfg, balancing, seed, progress, torch.device("cpu" if device is None else device))


def _train(cfg: ExperimentConfig, balancing: str, seed: int, progress, device: torch.device) -> TrainingRun:
    task = make_task(cfg, torch.Generator().manual_seed(seed))
    data_gen = torch.Generator().manual_seed(seed + 1)
    weights_gen = torch.Generator().manual_seed(seed + 2)  # the model's initial weights; the global state is left alone
    model = MoE(
        cfg.d_model,
        cfg.d_mlp,
        cfg.n_experts,
        cfg.k,
        cfg.capacity_factor,
        init_std=0.1,
        dispatch="dense",
        generator=weights_gen,
    ).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    shares, task_losses = [], []
    for _ in range(cfg.steps):
        x, y, _ = (t.to(device) for t in sample_batch(task, cfg.batch, data_gen))
        out, routing = model.forward_with_routing(x)
        task_loss = (out - y).pow(2).mean()
        loss = task_loss
        if balancing == "aux":
            loss = loss + _load_balancing_loss(routing.logits, cfg.k, cfg.alpha, routing.indices)  # checked above
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if balancing == "bias":
            with torch.no_grad():
                model.selection_bias.copy_(update_selection_bias(model.selection_bias, routing.load(), cfg.bias_rate))
        shares.append(load_shares(routing.indices, cfg.n_experts).cpu())
        task_losses.append(float(task_loss.detach()))
        if progress is not None:
            progress.update(1)
    x, y, ids = sample_batch(task, 4096, torch.Generator().manual_seed(seed + 3))
    with torch.no_grad():
        eval_loss = float((model(x.to(device)) - y.to(device)).pow(2).mean())
    model = model.cpu()  # what follows (the tables, the widget, capacity_report) reads it on the CPU
    return TrainingRun(
        cfg,
        balancing,
        model,
        torch.stack(shares).float(),
        task_losses,
        eval_loss,
        specialisation(model, x, ids, cfg.n_tasks),
    )


def run_experiment(cfg: ExperimentConfig, seed: int = 0, progress=None, device=None) -> dict[str, TrainingRun]:
    """The three runs on the same seed: ``{"none": ..., "aux": ..., "bias": ...}`` (``device``: ``train_moe``)."""
    return {balancing: train_moe(cfg, balancing, seed, progress, device) for balancing in BALANCING}


def train_grid(
    cfg: ExperimentConfig,
    n_experts: tuple[int, ...],
    ks: tuple[int, ...],
    alphas: tuple[float, ...],
    seed: int = 0,
    progress=None,
) -> dict[tuple[int, int, float], TrainingRun]:
    """One short run per (E, k, α) with the auxiliary loss (α = 0: no balancing), for the widget."""
    grid = {}
    for E in n_experts:
        for k in ks:
            for alpha in alphas:
                run_cfg = replace(cfg, n_experts=E, k=k, alpha=alpha)
                grid[E, k, alpha] = train_moe(run_cfg, "aux" if alpha > 0 else "none", seed)
                if progress is not None:
                    progress.update(1)
    return grid


def probe_batch(cfg: ExperimentConfig, n: int = 512, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Fresh inputs and their sub-task ids from the task of ``seed`` (the same task ``train_moe`` used)."""
    task = make_task(cfg, torch.Generator().manual_seed(seed))
    x, _, ids = sample_batch(task, n, torch.Generator().manual_seed(seed + 4))
    return x, ids


def capacity_report(model: MoE, x: Tensor, capacity_factor: float | None) -> dict:
    """Route ``x`` through ``model`` under ``capacity_factor``: load, dropped and kept per expert."""
    check_capacity_factor(capacity_factor)
    old = model.capacity_factor
    model.capacity_factor = capacity_factor
    try:
        with torch.no_grad():
            routing = model.route(x)
    finally:
        model.capacity_factor = old
    load, dropped = routing.load(), routing.dropped()
    return {
        "capacity": routing.capacity,
        "load": load,
        "dropped": dropped,
        "kept": load - dropped,
        "assignments": int(load.sum()),
        "total_dropped": int(dropped.sum()),
        "tokens_fully_dropped": int((~routing.kept).all(dim=-1).sum()),
    }


def expert_owners(table: Tensor, threshold: float = 0.25) -> list[list[int]]:
    """For each sub-task (row of a ``specialisation`` table), the experts taking more than ``threshold`` of it."""
    return [sorted(torch.nonzero(row > threshold).flatten().tolist()) for row in table]
