"""Exercise ``split_logit_difference(writes, ln_w, eps, direction)``: direct logit attribution at one position.

Required form (stated in the notebook): ``writes`` (n_parts, d_model) are the pieces whose sum is the final
stream at one position (the embedding, every head, every MLP, ...); ``ln_w`` (d_model,) the final LayerNorm's
gain, ``eps`` its epsilon; ``direction`` (d_model,) is ``W_U[:, A] - W_U[:, B]``. The result (n_parts,) is each
write's direct part of ``logit_A - logit_B`` with the LayerNorm's scale frozen: the scale
``sqrt(var(final) + eps)`` (population variance) of the whole final stream, each write centred (its own mean
subtracted), divided by that scale, times ``ln_w``, dotted with ``direction``. The parts plus ``ln_b · direction``
add up to the logit difference. Checked against the formula of ``course_utils.interp.direct_logit_attribution``.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise

F64 = torch.float64


def split_logit_difference(writes, ln_w, eps, direction):
    """Reference: each write centred, divided by the final stream's frozen scale, read by ``ln_w * direction``."""
    final = writes.sum(0)  # (d_model,): the stream that reaches the final LayerNorm
    scale = (final.var(unbiased=False) + eps).sqrt()
    centred = writes - writes.mean(-1, keepdim=True)  # (n_parts, d_model)
    return (centred / scale) @ (ln_w * direction)  # (n_parts,)


def _split_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(400 + seed)
    found = []
    for n_parts, d_model, offset in ((5, 16, 0.0), (11, 24, 2.0), (3, 8, -1.0)):
        writes = torch.randn(n_parts, d_model, generator=gen, dtype=F64) + offset  # offset: writes with a mean
        writes = writes * (0.5 + torch.rand(n_parts, 1, generator=gen, dtype=F64))
        ln_w = 1 + 0.5 * torch.randn(d_model, generator=gen, dtype=F64)
        direction = torch.randn(d_model, generator=gen, dtype=F64)
        found.append(Case(f"{n_parts} writes of width {d_model}", (writes, ln_w, 1e-5, direction)))
    writes = 0.05 * torch.randn(4, 6, generator=gen, dtype=F64)  # a quiet stream: eps matters
    found.append(Case("4 small writes of width 6, eps 0.01", (writes, torch.ones(6, dtype=F64), 0.01,
                                                             torch.randn(6, generator=gen, dtype=F64))))
    return found


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("not centred", "LayerNorm subtracts the mean before it scales: centre each write (subtract its own "
              "mean over d_model) before dividing by the scale")
def _not_centred(writes, ln_w, eps, direction):
    final = writes.sum(0)
    return (writes / (final.var(unbiased=False) + eps).sqrt()) @ (ln_w * direction)


@bank.mistake("each write normalised on its own", "freeze ONE scale, the final stream's (the sum of all writes): "
              "normalising each write by its own spread makes the parts stop adding up")
def _own_scale(writes, ln_w, eps, direction):
    centred = writes - writes.mean(-1, keepdim=True)
    scale = (writes.var(-1, unbiased=False, keepdim=True) + eps).sqrt()
    return (centred / scale) @ (ln_w * direction)


@bank.mistake("the gain left out", "after normalising, LayerNorm multiplies by its gain ln_w: read each write with "
              "ln_w * direction")
def _no_gain(writes, ln_w, eps, direction):
    final = writes.sum(0)
    centred = writes - writes.mean(-1, keepdim=True)
    return (centred / (final.var(unbiased=False) + eps).sqrt()) @ direction


@bank.mistake("sample variance", "LayerNorm's variance divides by d_model (unbiased=False), not d_model - 1")
def _unbiased(writes, ln_w, eps, direction):
    final = writes.sum(0)
    centred = writes - writes.mean(-1, keepdim=True)
    return (centred / (final.var() + eps).sqrt()) @ (ln_w * direction)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("centre the reading vector instead (centring is symmetric)")
def _centre_read(writes, ln_w, eps, direction):
    read = ln_w * direction
    final = writes.sum(0)
    std = ((final - final.mean()).square().mean() + eps).sqrt()
    return writes @ (read - read.mean()) / std


@bank.alternative("einsum in float32")
def _einsum32(writes, ln_w, eps, direction):
    w32 = writes.float()
    centred = w32 - w32.mean(-1, keepdim=True)
    scale = torch.sqrt(w32.sum(0).var(unbiased=False) + eps)
    return torch.einsum("pd,d,d->p", centred, ln_w.float(), direction.float()) / scale


@bank.alternative("a centring matrix")
def _matrix(writes, ln_w, eps, direction):
    d = writes.shape[-1]
    centre = torch.eye(d, dtype=writes.dtype) - 1.0 / d  # x @ centre subtracts x's mean
    final = writes.sum(0)
    scale = torch.sqrt((final @ centre).square().mean() + eps)
    return (writes @ centre @ torch.diag(ln_w) @ direction) / scale


@bank.alternative("one part at a time, in Python")
def _loop(writes, ln_w, eps, direction):
    final = writes.sum(0)
    scale = float((final.var(unbiased=False) + eps) ** 0.5)
    return torch.tensor([float(((c - c.mean()) * ln_w * direction).sum()) / scale for c in writes])


LOGIT_ATTRIBUTION = Exercise(
    name="logit_attribution",
    reference=split_logit_difference,
    cases=_split_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    function_name="split_logit_difference",
    hints=[
        "LayerNorm is centre, divide by a scale, multiply by a gain, add a bias. Centring and the gain are linear, "
        "so they apply to each write on its own; only the scale needs the whole stream.",
        "The whole stream is the sum of the writes: its spread (with eps, divided by d_model) is the one scale every "
        "part is divided by. Then each centred write, times the gain, dotted with the direction.",
    ],
)
EXERCISES = {LOGIT_ATTRIBUTION.name: LOGIT_ATTRIBUTION}


def check_logit_attribution(fn):
    """Check a student's ``split_logit_difference(writes, ln_w, eps, direction)``."""
    return LOGIT_ATTRIBUTION.check(fn)
