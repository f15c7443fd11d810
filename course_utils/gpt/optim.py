"""AdamW's update and gradient clipping by global norm, written out as plain functions on tensors.

Covers ``adamw_step`` (one AdamW update of named parameters: moment estimates, bias correction,
decoupled weight decay on matrices only, as ``training.make_optimizer`` sets ``torch.optim.AdamW`` up),
``decays`` (which parameters are decayed: those with 2 or more dimensions), ``clip_grad_norm``
(gradients scaled so their global norm is at most ``max_norm``, as ``torch.nn.utils.clip_grad_norm_``
does) and ``StepOptimizer``, which drives a model's parameters with any function shaped like
``adamw_step`` behind the torch optimiser interface a training loop uses (``param_groups``,
``zero_grad``, ``step``). The functions return new tensors, so a test or a grader can compare them;
``tests/test_optim.py`` checks them against ``torch.optim.AdamW`` and ``clip_grad_norm_``.
``lr_schedule`` is ``training.lr_at`` with its numbers spelled out (the exercise's form).
Leaves out the loop (``capstone.training_loop``) and every other optimiser.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor, nn

from course_utils.gpt.training import TrainConfig, lr_at
from course_utils.validate import non_negative_number, positive_int, positive_number

CLIP_EPS = 1e-6  # torch's clip_grad_norm_ divides by norm + 1e-6


def decays(param: Tensor) -> bool:
    """Whether AdamW decays this parameter: matrices (2-d and up) yes, biases and LayerNorm scales no.

    ``decays(torch.zeros(3, 4))`` -> True; ``decays(torch.zeros(4))`` -> False.
    """
    return param.ndim >= 2


def adamw_step(
    params: dict[str, Tensor],
    grads: dict[str, Tensor],
    m: dict[str, Tensor],
    v: dict[str, Tensor],
    step: int,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.95),
    eps: float = 1e-8,
    weight_decay: float = 0.1,
) -> tuple[dict[str, Tensor], dict[str, Tensor], dict[str, Tensor]]:
    """One AdamW update; returns new ``(params, m, v)``, each a dict by parameter name.

    ``step`` counts updates from 1 (the bias correction divides by 1 - beta**step); ``m`` and ``v``
    start at zero. Per parameter: m <- b1·m + (1 - b1)·g, v <- b2·v + (1 - b2)·g², then
    p <- p·(1 - lr·wd) - lr·m̂ / (sqrt(v̂) + eps), the decay only on matrices (``decays``).
    With a = 1 everywhere at step 1 the update is -lr·sign(g) (m̂ = g, v̂ = g²).
    """
    positive_int("step", step)
    non_negative_number("lr", lr)
    non_negative_number("weight_decay", weight_decay)
    positive_number("eps", eps)
    b1, b2 = betas
    new_params, new_m, new_v = {}, {}, {}
    for name, p in params.items():
        g = grads[name]
        new_m[name] = b1 * m[name] + (1 - b1) * g
        new_v[name] = b2 * v[name] + (1 - b2) * g * g
        m_hat = new_m[name] / (1 - b1**step)  # bias correction: m and v start at 0
        v_hat = new_v[name] / (1 - b2**step)
        decayed = p * (1 - lr * weight_decay) if decays(p) else p  # decoupled: not added to the gradient
        new_params[name] = decayed - lr * m_hat / (v_hat.sqrt() + eps)
    return new_params, new_m, new_v


def lr_schedule(step: int, max_lr: float, min_lr: float, warmup_steps: int, total_steps: int) -> float:
    """``training.lr_at`` with the schedule's numbers as arguments: ``lr_schedule(0, 4e-3, 4e-4, 50, 800)`` -> 8e-05."""
    return lr_at(step, TrainConfig(steps=total_steps, warmup_steps=warmup_steps, max_lr=max_lr, min_lr=min_lr))


def clip_grad_norm(grads: list[Tensor], max_norm: float) -> list[Tensor]:
    """Gradients scaled by min(1, max_norm / (norm + 1e-6)), norm being the L2 norm of all of them at once.

    ``clip_grad_norm([tensor([3., 0.]), tensor([4.])], 1.0)`` -> ``[tensor([0.6, 0.]), tensor([0.8])]``
    (up to the 1e-6); gradients whose global norm is already at most ``max_norm`` come back unchanged.
    Computed as ``torch.nn.utils.clip_grad_norm_`` does (the norm of the per-tensor norms, the factor a tensor
    on the gradients' device), but returning new tensors instead of changing ``.grad`` in place.
    """
    positive_number("max_norm", max_norm)
    if not grads:
        return []
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))  # over every entry
    scale = torch.clamp(max_norm / (norm + CLIP_EPS), max=1.0)
    return [g * scale.to(g.dtype) for g in grads]


class StepOptimizer:
    """A torch-style optimiser over ``model``'s parameters whose update is ``step_fn`` (``adamw_step``'s shape).

    One parameter group (set ``param_groups[0]["lr"]`` before ``step()``, as a schedule does); the
    moment estimates live here, by parameter name. ``StepOptimizer(model, adamw_step, betas=(0.9, 0.95),
    weight_decay=0.1)`` trains like ``training.make_optimizer`` (``tests/test_optim.py``).
    """

    def __init__(self, model: nn.Module, step_fn: Callable, lr: float = 1e-3, betas=(0.9, 0.95), eps: float = 1e-8,
                 weight_decay: float = 0.1):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
        if not callable(step_fn):
            raise TypeError(f"step_fn must be a function shaped like adamw_step, got {type(step_fn).__name__}")
        self.named = dict(model.named_parameters())
        self.step_fn, self.betas, self.eps, self.weight_decay = step_fn, tuple(betas), eps, weight_decay
        self.param_groups = [{"params": list(self.named.values()), "lr": lr}]
        self.m = {k: torch.zeros_like(p) for k, p in self.named.items()}
        self.v = {k: torch.zeros_like(p) for k, p in self.named.items()}
        self.steps = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.named.values():
            p.grad = None if set_to_none or p.grad is None else torch.zeros_like(p.grad)

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient, through ``step_fn``."""
        live = {k: p for k, p in self.named.items() if p.grad is not None}
        self.steps += 1
        new_p, new_m, new_v = self.step_fn(
            {k: p.detach().clone() for k, p in live.items()},
            {k: p.grad.detach().clone() for k, p in live.items()},
            {k: self.m[k] for k in live},
            {k: self.v[k] for k in live},
            self.steps,
            self.param_groups[0]["lr"],
            self.betas,
            self.eps,
            self.weight_decay,
        )
        for k, p in live.items():
            p.copy_(new_p[k])
            self.m[k], self.v[k] = new_m[k].detach(), new_v[k].detach()
