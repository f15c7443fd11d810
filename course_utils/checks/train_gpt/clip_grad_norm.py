"""Exercise ``clip_grad_norm(grads, max_norm)``: scale all gradients together so their global norm is at most max_norm.

Required form (stated in the notebook): ``grads`` is a list of tensors of any shapes; the global norm is the
L2 norm of all their entries at once; when it exceeds ``max_norm`` every gradient is multiplied by
``max_norm / (norm + 1e-6)``, otherwise they come back unchanged; return the list (new tensors or the same
ones). ``torch.nn.utils.clip_grad_norm_`` does the same to a model's ``.grad``s in place.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import F64
from course_utils.gpt.optim import clip_grad_norm as _clip_grad_norm


def clip_grad_norm(grads, max_norm):
    """Reference: ``optim.clip_grad_norm`` (tested against ``torch.nn.utils.clip_grad_norm_``)."""
    return _clip_grad_norm(grads, max_norm)


def _clip_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=F64)  # noqa: E731
    return [
        Case("a matrix, a vector and a 3-d tensor, global norm about 7, max_norm 1",
             ([2 * rand(4, 3), 2 * rand(3), 2 * rand(2, 2, 2)], 1.0)),
        Case("global norm below max_norm (nothing to clip), max_norm 10", ([0.5 * rand(5, 2), 0.5 * rand(5)], 10.0)),
        Case("one large gradient among small ones, max_norm 0.5",
             ([0.05 * rand(3, 3), 5 * rand(4), 0.05 * rand(2)], 0.5)),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "a norm per tensor",
    "use ONE norm for all the gradients together (the square root of the sum of every entry's square, over every "
    "tensor), and scale them all by the same factor; clipping each tensor by its own norm changes their direction",
)
def clip_per_tensor(grads, max_norm):
    return [g * min(1.0, max_norm / (float(g.norm()) + 1e-6)) for g in grads]


@bank.mistake(
    "scaled up too",
    "only scale DOWN: gradients whose global norm is already at most max_norm stay as they are",
)
def clip_always(grads, max_norm):
    norm = float(torch.sqrt(sum((g**2).sum() for g in grads)))
    return [g * max_norm / (norm + 1e-6) for g in grads]


@bank.mistake(
    "sum of the norms",
    "the global norm is the square root of the sum of all squares, not the sum of each tensor's norm",
)
def clip_sum_of_norms(grads, max_norm):
    norm = float(sum(g.norm() for g in grads))
    return [g * min(1.0, max_norm / (norm + 1e-6)) for g in grads]


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.nn.utils.clip_grad_norm_ on stand-in parameters")
def _clip_torch(grads, max_norm):
    params = [torch.zeros_like(g, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    return [p.grad for p in params]


@bank.alternative("one flat vector, clamp, no 1e-6")
def _clip_flat(grads, max_norm):
    norm = torch.linalg.vector_norm(torch.cat([g.flatten() for g in grads]))
    scale = torch.clamp(max_norm / norm, max=1.0)
    return [g * scale for g in grads]


@bank.alternative("norm of the norms, an if, in place")
def _clip_in_place(grads, max_norm):
    norm = torch.stack([g.norm() for g in grads]).norm()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return grads


@bank.alternative("float32")
def _clip_float32(grads, max_norm):
    grads = [g.float() for g in grads]
    norm = sum(g.pow(2).sum() for g in grads).sqrt()
    return [g * min(1.0, max_norm / (norm.item() + 1e-6)) for g in grads]


CLIP_GRAD_NORM = Exercise(
    name="clip_grad_norm",
    reference=clip_grad_norm,
    cases=_clip_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Think of all the gradients as one long vector: measure its length once, and if it is too long, shrink the "
        "whole vector (every tensor by the same factor) so its length becomes max_norm.",
        "The norm is the square root of a single total: every tensor's sum of squared entries, added up over the "
        "tensors. The factor is max_norm divided by the norm plus 1e-6, used only when it is below 1.",
    ],
)
EXERCISES = {CLIP_GRAD_NORM.name: CLIP_GRAD_NORM}


def check_clip_grad_norm(fn):
    """Check a student's ``clip_grad_norm(grads, max_norm)``."""
    return CLIP_GRAD_NORM.check(fn)
