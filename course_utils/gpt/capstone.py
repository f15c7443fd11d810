"""The capstone: the course recipe trained with the student's own parts wherever their checks passed.

Covers ``training_loop`` (the recipe's loop written out: seeded batches, the schedule, cross-entropy,
backward, clipping by global norm, an optimiser step; ``training.train`` without evaluation or
progress bar, the reference of notebook 10's loop exercise), ``estimate_loss`` (the recipe's validation
loss on evenly spaced fixed windows, in eval mode and without gradients, the model's mode restored:
``training.evaluate`` for any model called as ``model(tokens)``) and ``assemble``, which takes the
student's objects by part (``PARTS``: ``model``, a class built from a ``GPTConfig``; ``next_token_loss``,
the loss the loop optimises, given to it through ``on_targets``; ``adamw_step``, ``lr_schedule``,
``clip_grad_norm``, ``training_loop`` and ``estimate_loss``, functions shaped like ``optim``'s and this
module's) with their check verdicts, and returns a ``Capstone``: the student's part
where its verdict passed, the course's where not, ``summary()`` saying which in one line, ``train()``
running the loop and ``validation_loss()`` the evaluation. The student's model starts from the course
model's seeded initialisation (its ``state_dict`` loaded), so both runs start from the same weights; given
the optional part ``init_weights`` (``INIT_PART``: the whole recipe from scratch), that initialisation is
drawn by the student's function instead, from the same seeded generator.
Leaves out plots and the progress bar (``training``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import torch
from torch import nn

from course_utils.gpt.model import GPT
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.optim import StepOptimizer, clip_grad_norm, lr_schedule
from course_utils.gpt.training import TrainConfig, get_batch, make_optimizer, sequence_loss
from course_utils.validate import int_tensor, positive_int

PARTS = {  # part -> what the summary calls it
    "model": "model",
    "next_token_loss": "loss",
    "adamw_step": "AdamW",
    "lr_schedule": "schedule",
    "clip_grad_norm": "clipping",
    "training_loop": "loop",
    "estimate_loss": "evaluation",
}
INIT_PART = {"init_weights": "initialisation"}  # optional: named in the summary only when it is given


def on_targets(next_token_loss: Callable) -> Callable:
    """``next_token_loss(logits, tokens)`` (it shifts: row i scored on token i + 1) as a loss on ``get_batch``'s
    targets, which are shifted already: ``on_targets(f)(logits, targets)``.

    The tokens it is given are a first token (never a target) followed by the targets, (batch, n_ctx + 1), and
    the logits one row more, zeros after the last (no token follows that row, so a next-token loss never scores
    it): a correct ``f`` gives ``sequence_loss(logits, targets)`` (``tests/test_capstone.py``).
    """
    if not callable(next_token_loss):
        raise TypeError(f"next_token_loss must be callable, got {type(next_token_loss).__name__}")

    def loss(logits, targets):
        tokens = torch.cat([targets[:, :1], targets], dim=1)  # (batch, n_ctx + 1): the first is never scored
        return next_token_loss(torch.cat([logits, torch.zeros_like(logits[:, :1])], dim=1), tokens)

    return loss


def training_loop(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm,
                  loss_fn=sequence_loss) -> list[float]:
    """``n_steps`` steps of the recipe (batches from a generator seeded with ``cfg.seed``); returns each step's loss.

    ``lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps)`` gives the rate, set in every
    parameter group before the step; ``loss_fn(logits, targets)`` scores the batch (``get_batch``'s targets,
    shifted already); ``clip_grad_norm(grads, max_norm)`` returns the clipped gradients.
    On the course model this replays ``training.train``'s log: to the bit with ``loss_fn=sequence_loss``, to
    float rounding with its default fused loss (``tests/test_capstone.py``).
    """
    generator = torch.Generator().manual_seed(cfg.seed)
    device = next(model.parameters()).device
    losses = []
    for step in range(n_steps):
        lr = lr_schedule(step, cfg.max_lr, cfg.min_lr, cfg.warmup_steps, cfg.steps)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, generator)  # each (batch, n_ctx)
        loss = loss_fn(model(x.to(device)), y.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for p in model.parameters() if p.grad is not None]
        for p, g in zip(params, clip_grad_norm([p.grad for p in params], cfg.grad_clip)):
            p.grad = g
        optimizer.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def estimate_loss(model: nn.Module, ids, n_windows: int) -> float:
    """Mean next-token loss on ``n_windows`` evenly spaced windows of ``ids`` (no randomness), in eval mode.

    Window k starts at ``linspace(0, len(ids) - n_ctx - 1, n_windows)[k]`` (truncated), as in
    ``training.evaluate``; the model is put back in the mode it was in. ``ids`` on the model's device.
    """
    int_tensor("ids", ids, " (token ids)")
    n_ctx = model.cfg.n_ctx
    if ids.ndim != 1 or len(ids) <= n_ctx:
        raise ValueError(f"ids must be a 1-d tensor of more than n_ctx={n_ctx} token ids, got shape {tuple(ids.shape)}")
    positive_int("n_windows", n_windows)
    starts = torch.linspace(0, len(ids) - n_ctx - 1, n_windows).long()
    windows = ids[starts[:, None] + torch.arange(n_ctx + 1)]  # (n_windows, n_ctx + 1)
    was_training = model.training
    model.eval()
    loss = sequence_loss(model(windows[:, :-1]), windows[:, 1:])
    model.train(was_training)
    return loss.item()


class FusedGPT(nn.Module):
    """The course ``GPT`` whose plain call runs the fused kernels (``impl="fused"``), as ``training.train`` does."""

    def __init__(self, gpt: GPT):
        super().__init__()
        self.gpt, self.cfg = gpt, gpt.cfg

    def forward(self, tokens):
        return self.gpt(tokens, impl="fused")


NOT_PASSED = "not passed"


def _reason(why: str, n: int) -> str:
    if why != NOT_PASSED:
        return why
    return "its check has not passed" if n == 1 else "their checks have not passed"


def summary_line(names: Mapping[str, str], yours: Mapping[str, bool], why_not: Mapping[str, str]) -> str:
    """``'all parts yours: a, b'``, or ``'yours: a; the course's: b (its check has not passed)'``, parts in
    ``names``' order (part -> what the line calls it), the course's grouped by the reason."""
    mine = [names[p] for p in names if yours[p]]
    if len(mine) == len(names):
        return f"all parts yours: {', '.join(mine)}"
    groups: dict[str, list[str]] = {}  # reason -> parts, in the names' order
    for p in names:
        if not yours[p]:
            groups.setdefault(why_not[p], []).append(names[p])
    theirs = "; ".join(f"{', '.join(parts)} ({_reason(why, len(parts))})" for why, parts in groups.items())
    return f"yours: {', '.join(mine) or 'none yet'}; the course's: {theirs}"


def passed(verdict) -> bool:
    """A verdict (``checks.Verdict``) or a bool: ``True`` only for a passed check."""
    return verdict is True or getattr(verdict, "passed", False) is True


@dataclass
class Capstone:
    """What ``assemble`` built: the parts to train with, and whose each is (``yours[part]``)."""

    model: nn.Module
    loss_fn: Callable
    optimizer: object
    lr_schedule: Callable
    clip_grad_norm: Callable
    loop: Callable
    estimate_loss: Callable
    train_cfg: TrainConfig
    yours: dict
    why_not: dict

    def summary(self) -> str:
        """One line: ``'all parts yours: model, loss, AdamW, ..., evaluation'``, or which are the course's, why."""
        return summary_line({**PARTS, **{p: n for p, n in INIT_PART.items() if p in self.yours}}, self.yours,
                            self.why_not)

    def train(self, train_ids, n_steps: int | None = None) -> list[float]:
        """Run the loop for ``n_steps`` (the whole recipe by default) on the model's device; returns the losses.

        The token ids go to the model's device first: ``get_batch``'s windows then come out there too."""
        n_steps = self.train_cfg.steps if n_steps is None else positive_int("n_steps", n_steps)
        train_ids = train_ids.to(next(self.model.parameters()).device)  # so a loop that never moves a batch works
        return self.loop(self.model, self.optimizer, train_ids, self.train_cfg, n_steps, self.lr_schedule,
                         self.clip_grad_norm, self.loss_fn)

    def validation_loss(self, val_ids) -> float:
        """The model's loss on ``train_cfg.eval_windows`` fixed windows of ``val_ids`` (the recipe's evaluation)."""
        val_ids = val_ids.to(next(self.model.parameters()).device)
        return float(self.estimate_loss(self.model, val_ids, self.train_cfg.eval_windows))


def student_model(cls, cfg: GPTConfig, course: nn.Module) -> tuple[nn.Module | None, str]:
    """The student's class built from ``cfg`` with the course model's initial weights, or (None, why not)."""
    try:
        model = cls(cfg)
        model.load_state_dict(course.state_dict())
    except Exception as exc:  # a class that cannot be built or loaded falls back to the course's
        return None, f"it did not take the course's weights: {type(exc).__name__}"
    if getattr(model, "cfg", None) is None:
        model.cfg = cfg  # the loop reads n_ctx from model.cfg
    return model, ""


def assemble(parts: Mapping, verdicts: Mapping, model_cfg: GPTConfig, train_cfg: TrainConfig | None = None,
             seed: int | None = None, device: torch.device | str = "cpu") -> Capstone:
    """The recipe's parts: ``parts[p]`` where ``verdicts[p]`` passed (a ``Verdict`` or a bool), else the course's.

    ``parts``/``verdicts`` are keyed by ``PARTS``; a missing key counts as not passed. ``seed``
    (``train_cfg.seed`` by default) initialises the course model, whose weights the student's model loads:
    by ``GPT.reset_parameters``, or by ``parts["init_weights"]`` when that key is given and its verdict passed
    (the summary then names the initialisation too). The model is moved to ``device`` before the optimiser
    is built over it.
    """
    if not isinstance(model_cfg, GPTConfig):
        raise TypeError(f"model_cfg must be a GPTConfig, got {type(model_cfg).__name__}")
    train_cfg = TrainConfig() if train_cfg is None else train_cfg
    if not isinstance(train_cfg, TrainConfig):
        raise TypeError(f"train_cfg must be a TrainConfig, got {type(train_cfg).__name__}")
    named = [*PARTS, *(p for p in INIT_PART if p in parts)]
    yours = {p: passed(verdicts.get(p)) and callable(parts.get(p)) for p in named}
    why_not = {p: "" if yours[p] else NOT_PASSED for p in named}
    course = GPT(model_cfg)
    draw = torch.Generator().manual_seed(train_cfg.seed if seed is None else seed)
    if yours.get("init_weights"):
        try:
            with torch.no_grad():  # the student's rule draws every weight from the recipe's seed
                parts["init_weights"](course, draw)
        except Exception as exc:  # their code: fall back to the course's rule and say why
            yours["init_weights"], why_not["init_weights"] = False, f"it raised {type(exc).__name__}"
    if not yours.get("init_weights"):
        course.reset_parameters(torch.Generator().manual_seed(train_cfg.seed if seed is None else seed))
    model = None
    if yours["model"]:
        model, why_not["model"] = student_model(parts["model"], model_cfg, course)
        yours["model"] = model is not None
    if model is None:
        model = FusedGPT(course)
    model = model.to(device)
    if yours["adamw_step"]:
        optimizer = StepOptimizer(model, parts["adamw_step"], lr=train_cfg.max_lr, betas=train_cfg.betas,
                                  weight_decay=train_cfg.weight_decay)
    else:
        optimizer = make_optimizer(model, train_cfg)
    own = {p: parts[p] if yours[p] else fallback for p, fallback in
           (("lr_schedule", lr_schedule), ("clip_grad_norm", clip_grad_norm), ("training_loop", training_loop),
            ("estimate_loss", estimate_loss))}
    loss_fn = on_targets(parts["next_token_loss"]) if yours["next_token_loss"] else sequence_loss
    return Capstone(model, loss_fn, optimizer, own["lr_schedule"], own["clip_grad_norm"], own["training_loop"],
                    own["estimate_loss"], train_cfg, yours, why_not)
