"""Exercise ``GeluMLP``: the MLP sub-layer of a GPT block, a class the student writes whole.

Required form (stated in the notebook): ``GeluMLP(cfg)`` for a ``GPTConfig``, holding ``W_in``
(d_model, d_mlp), ``b_in`` (d_mlp,), ``W_out`` (d_mlp, d_model) and ``b_out`` (d_model,) under exactly
these names (those of ``course_utils.gpt.model``); ``forward(x)`` is ``gelu(x @ W_in + b_in) @ W_out + b_out``
with GPT-2's tanh GELU, position by position. The check loads a course block's MLP weights into it and
compares with ``course_utils.mlp.MLP``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import F64, tiny_model
from course_utils.checks.build_gpt._classes import course_state, run_class
from course_utils.checks.weights import compare_or_convention
from course_utils.mlp import MLP


class GeluMLP(MLP):
    """Reference: notebook 06's MLP with the config's sizes and activation (GPT-2's tanh GELU)."""

    def __init__(self, cfg):
        super().__init__(cfg.d_model, cfg.d_mlp, activation=cfg.activation, bias=cfg.bias)


class _Layout(MLP):
    """The parameters only (the mistakes and alternatives write their own forward)."""

    def __init__(self, cfg):
        super().__init__(cfg.d_model, cfg.d_mlp, bias=True)


def _mlp_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    model = tiny_model(seed)
    # inputs of std 3: the pre-activations reach the range where GELU's two forms differ by ~1e-3
    return [
        Case(
            f"{name}, d_model 16, d_mlp 64, {batch} x {pos} positions",
            (model.cfg, course_state(model.blocks[layer].mlp),
             3 * torch.randn(batch, pos, 16, generator=gen, dtype=F64)),
        )
        for name, layer, batch, pos in (("block 0's weights", 0, 2, 5), ("block 1's weights", 1, 1, 7))
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("ReLU", "GPT's MLP uses GELU (GPT-2's tanh form), not ReLU: negative inputs give small negative outputs")
class _Relu(_Layout):
    def forward(self, x):
        return torch.relu(x @ self.W_in + self.b_in) @ self.W_out + self.b_out


@bank.mistake(
    "exact GELU",
    "GPT-2 uses GELU's tanh approximation (F.gelu with approximate='tanh'), which differs from the exact erf form "
    "by up to 1e-3; use the tanh form, so GPT-2's weights give GPT-2's numbers",
)
class _ExactGelu(_Layout):
    def forward(self, x):
        return F.gelu(x @ self.W_in + self.b_in) @ self.W_out + self.b_out


@bank.mistake("no activation", "apply GELU between the two matrices: without it the MLP is one linear map")
class _NoActivation(_Layout):
    def forward(self, x):
        return (x @ self.W_in + self.b_in) @ self.W_out + self.b_out


@bank.mistake("b_in after GELU", "add b_in before the activation: gelu(x @ W_in + b_in)")
class _BiasAfter(_Layout):
    def forward(self, x):
        return (F.gelu(x @ self.W_in, approximate="tanh") + self.b_in) @ self.W_out + self.b_out


@bank.mistake("residual inside", "the MLP returns only its own output; the block adds it to the stream")
class _ResidualInside(_Layout):
    def forward(self, x):
        return x + F.gelu(x @ self.W_in + self.b_in, approximate="tanh") @ self.W_out + self.b_out


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.gelu(approximate='tanh')")
class _Functional(_Layout):
    def forward(self, x):
        return F.gelu(x @ self.W_in + self.b_in, approximate="tanh") @ self.W_out + self.b_out


@bank.alternative("the tanh formula written out, einsum")
class _Written(_Layout):
    def forward(self, x):
        h = torch.einsum("bpm,mf->bpf", x, self.W_in) + self.b_in  # (batch, pos, d_mlp)
        h = 0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
        return torch.einsum("bpf,fm->bpm", h, self.W_out) + self.b_out


@bank.alternative("addmm on the flattened positions, float32")
class _Addmm(_Layout):
    def forward(self, x):
        rows = x.float().reshape(-1, x.shape[-1])  # (batch·pos, d_model)
        h = F.gelu(torch.addmm(self.b_in.float(), rows, self.W_in.float()), approximate="tanh")
        return torch.addmm(self.b_out.float(), h, self.W_out.float()).reshape(x.shape)


GELU_MLP = Exercise(
    name="gelu_mlp",
    reference=GeluMLP,
    cases=_mlp_cases,
    run=run_class,
    compare=compare_or_convention(),
    wants_class=True,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Up to d_mlp, a nonlinearity, back down to d_model, each position on its own; the biases belong to the "
        "matrix they follow.",
        "Notebook 06 wrote this as a function: the up-projection plus its bias, GPT-2's GELU (the tanh form: PyTorch's "
        "gelu takes an approximate argument), then the down-projection plus its bias. Nothing is added to x here.",
    ],
)
EXERCISES = {GELU_MLP.name: GELU_MLP}


def check_gelu_mlp(cls):
    """Check a student's ``GeluMLP`` class (built with a GPTConfig, its ``forward(x)``)."""
    return GELU_MLP.check(cls)
