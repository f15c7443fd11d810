"""Exercise ``dispatch_and_combine(x, indices, gates, experts)``: send each token to its k experts and
add their outputs back, each weighted by its gate.

Required form (stated in the notebook): ``out[t] = Σ_slot gates[t, slot] · experts[indices[t, slot]](x[t])``,
shape (tokens, d_model), without the residual (added outside the layer). The check runs under
``torch.no_grad``.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mixture_of_experts._cases import F64, random_logits
from course_utils.moe.layer import SwiGLU
from course_utils.moe.dispatch import dispatch_grouped, dispatch_naive
from course_utils.moe.routing import top_k_gates


def dispatch_and_combine(x: torch.Tensor, indices: torch.Tensor, gates: torch.Tensor, experts) -> torch.Tensor:
    """Reference: out[t] = Σ_slot gates[t, slot] · experts[indices[t, slot]](x[t])."""
    return dispatch_grouped(x, indices, gates, experts)


def _dispatch_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, tokens, d_model, n_experts, k in (
        ("12 tokens, 4 experts, k=2", 12, 6, 4, 2),
        ("30 tokens, 6 experts, k=2", 30, 8, 6, 2),
        ("10 tokens, 5 experts, k=3 (expert 3 idle, expert 4 chosen by token 0 only)", 10, 4, 5, 3),
    ):
        torch.manual_seed(seed * 1000 + tokens)
        experts = [SwiGLU(d_model, 2 * d_model, init_std=0.5).double() for _ in range(n_experts)]
        logits = random_logits(gen, tokens, n_experts)
        if n_experts == 5:  # an expert no token chose and one a single token chose: both edge cases of a loop
            logits[:, 3:] -= 20.0
            logits[0, 4] = logits[0, :3].max() + 0.5  # token 0's first choice, with a gate well below 1
        gates, indices = top_k_gates(logits, k)
        x = torch.randn(tokens, d_model, generator=gen, dtype=F64)
        cases.append(Case(label, (x, indices, gates, experts)))
    return cases


def _run_no_grad(impl, case: Case):
    with torch.no_grad():
        return impl(*case.args, **case.kwargs)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "gates ignored", "each expert's output must be multiplied by its gate before it is added to the token's row"
)
def _unweighted(x, indices, gates, experts):
    return dispatch_grouped(x, indices, torch.ones_like(gates), experts)


@bank.mistake(
    "first choice only",
    "only the first expert of each token was used: a token goes through all k of its chosen experts",
)
def _first_choice_only(x, indices, gates, experts):
    return dispatch_grouped(x, indices[:, :1], gates[:, :1], experts)


@bank.mistake(
    "overwrite instead of add",
    "a token's second expert overwrote its first: accumulate (+=, index_add_ or index_put_ with "
    "accumulate=True) instead of assigning",
)
def _overwrites(x, indices, gates, experts):
    out = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        token, slot = torch.where(indices == e)
        out[token] = gates[token, slot, None] * expert(x[token])  # = instead of +=
    return out


@bank.mistake(
    "first gate for every slot", "every slot used the first gate: slot j of token t is weighted by gates[t, j]"
)
def _first_gate_for_every_slot(x, indices, gates, experts):
    return dispatch_grouped(x, indices, gates[:, :1].expand_as(gates), experts)


@bank.mistake(
    "residual added", "return only the weighted sum of the experts' outputs: the residual x is added outside the layer"
)
def _with_residual(x, indices, gates, experts):
    return x + dispatch_grouped(x, indices, gates, experts)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("a loop over tokens")
def _alt_per_token_loop(x, indices, gates, experts):
    return dispatch_naive(x, indices, gates, experts)


@bank.alternative("dense combine matrix and einsum")
def _alt_dense_combine_matrix(x, indices, gates, experts):
    combine = torch.zeros(x.shape[0], len(experts), dtype=gates.dtype).scatter_add(1, indices, gates)  # (tokens, E)
    all_outputs = torch.stack([expert(x) for expert in experts], dim=1)  # (tokens, E, d_model)
    return torch.einsum("te,ted->td", combine, all_outputs)


@bank.alternative("masks and index_put_ with accumulate")
def _alt_masks_in_place(x, indices, gates, experts):
    out = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        token, slot = torch.nonzero(indices == e, as_tuple=True)
        if token.numel():
            out.index_put_((token,), gates[token, slot, None] * expert(x[token]), accumulate=True)
    return out


@bank.alternative("float32")
def _alt_float32(x, indices, gates, experts):
    out = torch.zeros(x.shape, dtype=torch.float32)
    for e, expert in enumerate(experts):
        token, slot = torch.where(indices == e)
        if token.numel():
            out.index_add_(0, token, gates[token, slot, None].float() * expert(x[token]).float())
    return out


DISPATCH_AND_COMBINE = Exercise(
    name="dispatch_and_combine",
    reference=dispatch_and_combine,
    cases=_dispatch_cases,
    run=_run_no_grad,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Work expert by expert: find which (token, slot) pairs chose expert e, run the expert once on those "
        "tokens' rows, and add the gate-weighted result back into those rows.",
        "torch.where(indices == e) gives the tokens and slots at once; with index_add_ along dim 0 a token that "
        "appears for two experts gets both contributions.",
    ],
    tolerance="float32",
)
EXERCISES = {DISPATCH_AND_COMBINE.name: DISPATCH_AND_COMBINE}


def check_dispatch_and_combine(fn):
    """Check a student's ``dispatch_and_combine(x, indices, gates, experts)``."""
    return DISPATCH_AND_COMBINE.check(fn)
