"""Training the small GPT: batches, cross-entropy, a warm-up + cosine schedule, AdamW, clipping, a bigram baseline.

Covers ``sequence_loss`` (notebook 04's cross-entropy at every position), ``split_tokens``
(train / validation, the last tenth held out), ``get_batch`` (random windows, seeded),
``lr_at`` (linear warm-up, then cosine decay to ``min_lr``), ``bigram_loss`` (the baseline: next
token from a count table of the previous one, add-α smoothed), ``evaluate`` (fixed windows, so the
number is reproducible), and ``train`` (the fused model and loss of ``gpt_fused``, AdamW with weight
decay on matrices only, gradient-norm clipping, a tqdm bar and an ``on_eval`` hook for a live curve).
Everything is seeded; the model's device is used throughout. Saving and loading the result:
``checkpoint.py``; stopping and resuming a run: ``resume.py`` (``train``'s ``save_state_to`` and
``resume_from``); how many threads to train with: ``threads.threads_for_load`` (importable from here too).
Leaves out mixed precision, gradient accumulation and distributed training.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn
from course_utils.env.progress import progress_bar

from course_utils.entropy import cross_entropy
from course_utils.gpt.fused import fused_sequence_loss
from course_utils.gpt.resume import load_training_state, restore_training_state, save_training_state
from course_utils.env.threads import threads_for_load  # noqa: F401 (notebook 10 imports it from here)
from course_utils.validate import int_in, int_tensor, integer, number, number_in, positive_int


@dataclass
class TrainConfig:
    """Optimiser and schedule: ``TrainConfig().steps`` -> 800 (the committed checkpoint's run).

    The defaults were chosen by measuring the validation loss on the course model: at a fixed number of
    tokens, more and shorter windows and more steps helped most (32 windows of 64 tokens beat 16 of 128
    by 0.18 nats after 600 steps), and a peak rate of 4e-3 beat 6e-3 and 1e-2.
    """

    steps: int = 800
    batch_size: int = 32
    max_lr: float = 4e-3
    min_lr: float = 4e-4
    warmup_steps: int = 50
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    eval_every: int = 50
    eval_windows: int = 64
    seed: int = 0

    def __post_init__(self):
        for name in ("steps", "batch_size", "eval_every", "eval_windows"):
            positive_int(f"TrainConfig.{name}", getattr(self, name))
        int_in("TrainConfig.warmup_steps", self.warmup_steps, 0, self.steps, high_name="steps")
        integer("TrainConfig.seed", self.seed)
        number("TrainConfig.min_lr", self.min_lr)
        number("TrainConfig.max_lr", self.max_lr)
        if not 0 <= self.min_lr <= self.max_lr:
            raise ValueError(f"TrainConfig needs 0 <= min_lr <= max_lr, got {self.min_lr} and {self.max_lr}")
        self.betas = tuple(self.betas)

    def to_dict(self) -> dict:
        return asdict(self)


def sequence_loss(logits: Float[Tensor, "batch pos d_vocab"], targets: Int[Tensor, "batch pos"]) -> Float[Tensor, ""]:
    """Mean cross-entropy over every position (notebook 04's ``cross_entropy`` on the flattened rows).

    ``targets`` are the inputs shifted by one (``get_batch`` does the shift): position i is scored
    on token i + 1. Uniform logits over d_vocab tokens give ln(d_vocab).
    """
    if not isinstance(logits, Tensor) or logits.ndim != 3:
        raise ValueError(
            f"logits must have shape (batch, pos, d_vocab), got {getattr(logits, 'shape', type(logits).__name__)}"
        )
    if not isinstance(targets, Tensor) or tuple(targets.shape) != tuple(logits.shape[:2]):
        raise ValueError(
            f"targets must have shape {tuple(logits.shape[:2])}, "
            f"got {getattr(targets, 'shape', type(targets).__name__)}"
        )
    return cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))  # (batch·pos, d_vocab) rows


def _check_ids(ids, name: str = "ids") -> Tensor:
    int_tensor(name, ids, " (token ids)")
    if ids.ndim != 1:
        raise ValueError(f"{name} must be a 1-d tensor of token ids, got shape {tuple(ids.shape)}")
    return ids


def split_tokens(ids: Int[Tensor, "n"], val_fraction: float = 0.1) -> tuple[Tensor, Tensor]:
    """First (1 - val_fraction) of the ids to train on, the rest to validate:
    ``split_tokens(arange(10))`` -> 9 and 1 ids."""
    _check_ids(ids)
    number_in("val_fraction", val_fraction, 0, 1, low_open=True, high_open=True)
    cut = int(len(ids) * (1 - val_fraction))
    return ids[:cut], ids[cut:]


def get_batch(ids: Int[Tensor, "n"], batch_size: int, n_ctx: int, generator: torch.Generator | None = None):
    """``batch_size`` random windows: inputs ``ids[i : i + n_ctx]`` and targets shifted by one, each (batch, n_ctx)."""
    _check_ids(ids)
    positive_int("batch_size", batch_size)
    positive_int("n_ctx", n_ctx)
    if len(ids) <= n_ctx:
        raise ValueError(f"ids has {len(ids)} tokens, need more than n_ctx={n_ctx}")
    return _get_batch(ids, batch_size, n_ctx, generator)


def _get_batch(ids: Tensor, batch_size: int, n_ctx: int, generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """``get_batch`` on arguments already checked (``train`` checks them once, before its first step)."""
    starts = torch.randint(0, len(ids) - n_ctx, (batch_size,), generator=generator)
    offsets = torch.arange(n_ctx + 1)
    windows = ids[starts[:, None] + offsets]  # (batch, n_ctx + 1)
    return windows[:, :-1], windows[:, 1:]


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate at ``step``: linear warm-up to max_lr, then cosine decay to min_lr at the last step.

    With the defaults: ``lr_at(0, cfg)`` -> 0.00015, ``lr_at(40, cfg)`` -> 0.006, ``lr_at(600, cfg)`` -> 0.0006.
    """
    if step < cfg.warmup_steps:
        return cfg.max_lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
    return cfg.min_lr + 0.5 * (cfg.max_lr - cfg.min_lr) * (1 + math.cos(math.pi * progress))


def bigram_loss(train_ids: Int[Tensor, "n"], val_ids: Int[Tensor, "m"], d_vocab: int, alpha: float = 0.1) -> float:
    """Validation cross-entropy of a bigram model: p(b | a) = (count(a, b) + α) / (count(a) + α·d_vocab).

    The best a model can do that sees only the previous token; a transformer must beat it.
    """
    counts = torch.zeros(d_vocab, d_vocab, dtype=torch.float64)
    counts.index_put_(
        (train_ids[:-1], train_ids[1:]), torch.ones(len(train_ids) - 1, dtype=torch.float64), accumulate=True
    )
    probs = (counts + alpha) / (counts.sum(dim=1, keepdim=True) + alpha * d_vocab)  # (prev, next), rows sum to 1
    return float(-probs[val_ids[:-1], val_ids[1:]].log().mean())


@torch.no_grad()
def evaluate(model: nn.Module, ids: Int[Tensor, "n"], n_windows: int, impl: str = "fused") -> float:
    """Mean loss on ``n_windows`` evenly spaced, fixed windows of ``ids`` (no randomness)."""
    n_ctx = model.cfg.n_ctx
    starts = torch.linspace(0, len(ids) - n_ctx - 1, n_windows).long()
    windows = ids[starts[:, None] + torch.arange(n_ctx + 1)]  # (n_windows, n_ctx + 1)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    total = sum(
        len(w) * sequence_loss(model(w[:, :-1].to(device), impl=impl), w[:, 1:].to(device)) for w in windows.split(16)
    )
    model.train(was_training)
    return float(total) / n_windows


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on every tensor of 2 or more dims (matrices, embeddings, the per-head b_Q/b_K/b_V).

    PyTorch's fused kernel: one pass over each tensor per step (the step at nanoGPT's shape on a CPU
    thread: about 1.3 ms instead of 3; ``benchmarks/bench_gpt.py``).
    """
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.max_lr, betas=cfg.betas, fused=True)


def train(
    model: nn.Module,
    train_ids: Int[Tensor, "n"],
    val_ids: Int[Tensor, "m"],
    cfg: TrainConfig,
    on_eval=None,
    progress: bool = True,
    stop_after: int | None = None,
    loss_fn=None,
    resume_from=None,
    save_state_to=None,
) -> dict:
    """Train in place; returns the log: per-step ``lr``, ``train_loss``; per eval ``eval_step``, ``val_loss``.

    ``on_eval(log)`` is called after every evaluation (the notebook's live curve). Batches come from
    a generator seeded with ``cfg.seed``, so the run is reproducible. ``stop_after`` ends the run
    early, on the same schedule (a test replays the first steps of the committed run this way).
    ``loss_fn(logits, targets)`` is the training loss: by default ``gpt_fused.fused_sequence_loss``,
    ``sequence_loss`` through one kernel each way (the same numbers up to float rounding; a step at
    nanoGPT's shape 153 ms instead of 181 on one thread, ``benchmarks/RESULTS_gpt.md``);
    ``loss_fn=sequence_loss`` trains with the readable one.
    ``save_state_to`` (a path) writes the run's state when this call ends (``resume.save_training_state``);
    ``resume_from`` (such a path) loads it into ``model`` and goes on from its step with the same ``cfg``,
    ``stop_after`` still counting from the run's first step: ``train(..., stop_after=N, save_state_to=p)``
    then ``train(..., resume_from=p)`` computes what one call does, bit for bit on the CPU. Resuming
    also restores the global generators (torch, CUDA, ``random``, NumPy) as they were when it was saved.
    """
    if loss_fn is None:
        loss_fn = fused_sequence_loss
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable (logits, targets) -> loss, got {type(loss_fn).__name__}")
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
    _check_ids(train_ids, "train_ids")  # once here; every step's _get_batch skips the checks
    if len(train_ids) <= model.cfg.n_ctx:
        raise ValueError(f"ids has {len(train_ids)} tokens, need more than n_ctx={model.cfg.n_ctx}")
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(cfg.seed)
    optimizer = make_optimizer(model, cfg)
    log = {"lr": [], "train_loss": [], "eval_step": [], "val_loss": []}
    start = 0
    if resume_from is not None:
        state, source = load_training_state(resume_from), f"training state {str(resume_from)!r}"
        if set(state["log"]) != set(log):
            raise ValueError(f"{source} has a log of {sorted(state['log'])}, expected {sorted(log)}")
        start = restore_training_state(state, model, optimizer, generator, cfg.to_dict(), source)
        log = state["log"]  # the returned log holds the whole run's, from its first step
    model.train()
    # At most one redraw a second: each is a message on the kernel's output channel, and a long run
    # that sends more than its queue holds (1,000) can lose the cell's final "idle" message there.
    bar = progress_bar(
        range(start, cfg.steps if stop_after is None else min(stop_after, cfg.steps)),
        desc="training",
        disable=not progress,
        mininterval=1.0,
    )
    for step in bar:
        lr = lr_at(step, cfg)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = _get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, generator)
        loss = loss_fn(model(x.to(device), impl="fused"), y.to(device))  # a 0-d tensor
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        log["lr"].append(lr)
        log["train_loss"].append(loss.item())
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            log["eval_step"].append(step + 1)
            log["val_loss"].append(evaluate(model, val_ids, cfg.eval_windows))
            bar.set_postfix(train=f"{log['train_loss'][-1]:.3f}", val=f"{log['val_loss'][-1]:.3f}")
            if on_eval is not None:
                on_eval(log)
    model.eval()
    if save_state_to is not None:
        done = max(start, cfg.steps if stop_after is None else min(stop_after, cfg.steps))
        save_training_state(save_state_to, model, optimizer, generator, done, log, cfg.to_dict())
    return log
