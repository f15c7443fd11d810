"""Exercise ``SwiGLU``: the feed-forward of a Llama-style block, a class the student writes whole.

Required form (stated in the notebook): ``SwiGLU(d_model, d_mlp)`` holding ``W_gate`` and ``W_in``
(d_model, d_mlp) and ``W_out`` (d_mlp, d_model) under exactly these names (Meta's w1, w3 and w2; those of
``course_utils.moe.SwiGLU``), no biases; ``forward(x)`` = (silu(x @ W_gate) * (x @ W_in)) @ W_out, position
by position. The check loads seeded weights by name (an ``nn.Linear`` of the right size under the same
name is accepted too) and compares with ``course_utils.moe.SwiGLU``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.weights import Slot, compare_or_convention, convention_answer, load_weights
from course_utils.moe.layer import SwiGLU as _CourseSwiGLU

F64 = torch.float64


class SwiGLU(_CourseSwiGLU):
    """Reference: the course's SwiGLU (notebook 07's expert)."""

    def __init__(self, d_model, d_mlp):
        super().__init__(d_model, d_mlp)


def _swiglu_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=F64)  # noqa: E731
    return [
        Case("d_model 8, d_mlp 16, batch 2 of 5 positions", (8, 16, rand(2, 5, 8), seed)),
        Case("d_model 12, d_mlp 32, 3 tokens without a batch axis", (12, 32, rand(3, 12), seed + 100)),
        Case("d_model 16, d_mlp 44, inputs of std 3 (pre-activations far into both tails)",
             (16, 44, 3 * rand(1, 7, 16), seed + 200)),
    ]


def _slots(d_model: int, d_mlp: int, seed: int) -> list[Slot]:
    gen = torch.Generator().manual_seed(seed)
    slots = []
    for name, shape, words, usage in (
        ("W_gate", (d_model, d_mlp), "(d_model, d_mlp)", "silu(x @ W_gate)"),
        ("W_in", (d_model, d_mlp), "(d_model, d_mlp)", "x @ W_in"),
        ("W_out", (d_mlp, d_model), "(d_mlp, d_model)", "h @ W_out"),
    ):
        value = torch.randn(*shape, generator=gen, dtype=F64) / shape[0] ** 0.5
        slots.append(Slot(name, value, value, words, usage))
    return slots


def _run_module(cls, case: Case):
    d_model, d_mlp, x, seed = case.args
    module = cls(d_model, d_mlp).double()
    problem = load_weights(module, _slots(d_model, d_mlp, seed))
    if problem is not None:
        return convention_answer(problem)
    with torch.no_grad():
        return module(x)


class _Layout(nn.Module):
    """The parameters only (the mistakes and alternatives write their own forward)."""

    def __init__(self, d_model, d_mlp):
        super().__init__()
        self.W_gate = nn.Parameter(torch.zeros(d_model, d_mlp))
        self.W_in = nn.Parameter(torch.zeros(d_model, d_mlp))
        self.W_out = nn.Parameter(torch.zeros(d_mlp, d_model))


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("SiLU on the wrong branch", "SiLU goes on the gate branch, x @ W_gate; x @ W_in stays linear")
class _WrongBranch(_Layout):
    def forward(self, x):
        return ((x @ self.W_gate) * F.silu(x @ self.W_in)) @ self.W_out


@bank.mistake("GELU instead of SiLU", "Llama's gate is SiLU, x · sigmoid(x) (F.silu), not GELU")
class _Gelu(_Layout):
    def forward(self, x):
        return (F.gelu(x @ self.W_gate) * (x @ self.W_in)) @ self.W_out


@bank.mistake("sigmoid instead of SiLU", "the gate is SiLU, x · sigmoid(x), not the plain sigmoid of the original "
              "GLU")
class _Sigmoid(_Layout):
    def forward(self, x):
        return (torch.sigmoid(x @ self.W_gate) * (x @ self.W_in)) @ self.W_out


@bank.mistake("no gate", "multiply SiLU of the gate branch by the second branch x @ W_in, element by element, "
              "before W_out: that product is the gating")
class _NoGate(_Layout):
    def forward(self, x):
        return F.silu(x @ self.W_gate) @ self.W_out


@bank.mistake("SiLU after the product", "apply SiLU to the gate branch alone, then multiply by x @ W_in")
class _SiluOfProduct(_Layout):
    def forward(self, x):
        return F.silu((x @ self.W_gate) * (x @ self.W_in)) @ self.W_out


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("three nn.Linear layers without bias (Meta's w1, w3, w2), float32")
class _Linears(nn.Module):
    def __init__(self, d_model, d_mlp):
        super().__init__()
        self.W_gate = nn.Linear(d_model, d_mlp, bias=False)
        self.W_in = nn.Linear(d_model, d_mlp, bias=False)
        self.W_out = nn.Linear(d_mlp, d_model, bias=False)

    def forward(self, x):
        x = x.float()
        gate, up = F.linear(x, self.W_gate.weight.float()), F.linear(x, self.W_in.weight.float())
        return F.linear(F.silu(gate) * up, self.W_out.weight.float())


@bank.alternative("SiLU written out: g * sigmoid(g)")
class _SiluByHand(_Layout):
    def forward(self, x):
        g = x @ self.W_gate
        return (g * torch.sigmoid(g) * (x @ self.W_in)) @ self.W_out


@bank.alternative("gate and up in one matmul, then chunk")
class _Fused(_Layout):
    def forward(self, x):
        gate, up = (x @ torch.cat([self.W_gate, self.W_in], dim=1)).chunk(2, dim=-1)
        return (F.silu(gate) * up) @ self.W_out


@bank.alternative("einsum")
class _Einsum(_Layout):
    def forward(self, x):
        gate = torch.einsum("...m,mh->...h", x, self.W_gate)
        up = torch.einsum("...m,mh->...h", x, self.W_in)
        return torch.einsum("...h,hm->...m", F.silu(gate) * up, self.W_out)


SWIGLU_FEED_FORWARD = Exercise(
    name="swiglu_feed_forward",
    reference=SwiGLU,
    cases=_swiglu_cases,
    run=_run_module,
    compare=compare_or_convention(),
    wants_class=True,
    function_name="SwiGLU",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two up-projections of the same size side by side: one goes through the activation and acts as a gate, the "
        "other stays linear; their element-wise product is what the down-projection reads.",
        "Make the three weights nn.Parameters under the names given, shaped so that x @ W works. In forward the "
        "activation is SiLU, on the gate branch only; the product of the two branches then meets W_out.",
    ],
)
EXERCISES = {SWIGLU_FEED_FORWARD.name: SWIGLU_FEED_FORWARD}


def check_swiglu_feed_forward(cls):
    """Check a student's ``SwiGLU`` class (its ``__init__(d_model, d_mlp)`` and ``forward(x)``)."""
    return SWIGLU_FEED_FORWARD.check(cls)
