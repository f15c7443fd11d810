"""Exercise ``init_weights(model, generator)``: GPT-2's initialisation of a model with the course's names.

Required form (stated in the notebook): in place, every matrix and embedding drawn from a normal with mean 0
and standard deviation ``cfg.init_std``, the two that write into the residual stream (``W_O`` and
``W_out``) with ``cfg.init_std / sqrt(2 * cfg.n_layers)``, every bias (``b_Q``, ``b_K``, ``b_V``, ``b_O``,
``b_in``, ``b_out`` and LayerNorm's ``b``) zero and LayerNorm's scale ``w`` one; every random number drawn
from ``generator``. Any order of the draws is right, so the check compares each parameter's root mean
square and its standard deviation with the reference's (within 12%: the tensors hold 2,048 entries or more,
so two correct draws differ by under 3%; the mistakes by 41% or more), the constant ones exactly, and runs
the function twice with the same seed to see that the draws come from the generator.
"""

from __future__ import annotations

import random

import copy
import math

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.compare import distinct_digits
from course_utils.checks.core import Case, Exercise
from course_utils.gpt.model import GPT
from course_utils.gpt.config import GPTConfig

RMS_RTOL = 0.12


@torch.no_grad()
def init_weights(model, generator):
    """Reference: ``GPT.reset_parameters``."""
    model.reset_parameters(generator)


def _init_cases(seed: int) -> list[Case]:
    draws = (10 + seed, 20 + seed)
    if seed:  # hidden cases: the generators' seeds come from random.Random(seed), which the grader keys
        rng = random.Random(seed)
        draws = (rng.randrange(2**31), rng.randrange(2**31))
    return [
        Case("4 layers, d_model 64, tied embeddings", (GPTConfig(d_vocab=64, n_ctx=64, d_model=64, n_heads=4,
                                                                 n_layers=4), draws[0])),
        Case("2 layers, d_model 48, its own W_U", (GPTConfig(d_vocab=64, n_ctx=48, d_model=48, n_heads=3, n_layers=2,
                                                             tie_embeddings=False), draws[1])),
    ]


def _run_init(impl, case: Case) -> dict:
    """Each parameter's root mean square and standard deviation after ``impl`` on a model filled with 7s, and
    whether a second run from the same seed gives the same weights."""
    cfg, seed = case.args
    template = GPT(cfg)
    with torch.no_grad():
        for p in template.parameters():
            p.fill_(7.0)  # anything left as it was shows
    states = []
    for model in (template, copy.deepcopy(template)):
        impl(model, torch.Generator().manual_seed(seed))
        states.append({name: t.detach().double() for name, t in model.state_dict().items()})
    rms = {name: float(t.pow(2).mean().sqrt()) for name, t in states[0].items()}
    std = {name: float(t.std(correction=0)) for name, t in states[0].items()}
    same = all(torch.equal(states[0][name], states[1][name]) for name in states[0])
    return {"rms": rms, "std": std, "the same weights from the same seed": same}


def _compare(expected: dict, got: dict) -> str | None:
    for stat, words in (("rms", "root mean square"), ("std", "standard deviation")):
        for name, want in expected[stat].items():
            have = got[stat].get(name, math.nan)
            constant = expected["std"][name] == 0.0  # a bias or a LayerNorm parameter: exactly 0 or 1
            if not (abs(have - want) <= 1e-6 if constant else abs(have - want) <= RMS_RTOL * want):
                want_text, have_text = distinct_digits(want, have)
                kind = "exactly" if constant else f"near (within {RMS_RTOL:.0%})"
                return f"{name}: expected a {words} {kind} {want_text}, got {have_text}"
    if got["the same weights from the same seed"] != expected["the same weights from the same seed"]:
        return "two runs from the same seed gave different weights: draw every random number from `generator`"
    return None


bank = Bank()


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "no residual scaling",
    "W_O and W_out write into the residual stream, 2·n_layers writes in all: divide their standard deviation by "
    "sqrt(2 * n_layers)",
)
@torch.no_grad()
def init_unscaled(model, generator):
    for name, p in model.named_parameters():
        if _leaf(name) == "w":
            p.fill_(1.0)
        elif _leaf(name).startswith("b"):
            p.zero_()
        else:
            p.normal_(0.0, model.cfg.init_std, generator=generator)


@bank.mistake(
    "scaled by sqrt(n_layers)",
    "each block writes into the stream twice (attention, then the MLP): the factor is 1 / sqrt(2 * n_layers)",
)
@torch.no_grad()
def init_half_scaled(model, generator):
    for name, p in model.named_parameters():
        if _leaf(name) == "w":
            p.fill_(1.0)
        elif _leaf(name).startswith("b"):
            p.zero_()
        elif _leaf(name) in ("W_O", "W_out"):
            p.normal_(0.0, model.cfg.init_std / math.sqrt(model.cfg.n_layers), generator=generator)
        else:
            p.normal_(0.0, model.cfg.init_std, generator=generator)


@bank.mistake(
    "per-head biases drawn as matrices",
    "b_Q, b_K and b_V have two dimensions (head, d_head) but are biases: decide by the name, not by ndim, and "
    "start every bias at zero",
)
@torch.no_grad()
def init_by_ndim(model, generator):
    for name, p in model.named_parameters():
        if p.ndim < 2:
            p.fill_(1.0) if _leaf(name) == "w" else p.zero_()
        else:
            std = model.cfg.init_std / math.sqrt(2 * model.cfg.n_layers) if _leaf(name) in ("W_O", "W_out") else None
            p.normal_(0.0, std or model.cfg.init_std, generator=generator)


@bank.mistake(
    "LayerNorm scale zeroed",
    "LayerNorm's scale w starts at 1 (and its shift b at 0), so that at the start it only normalises: at 0 it "
    "would erase its input",
)
@torch.no_grad()
def init_ln_zero(model, generator):
    for name, p in model.named_parameters():
        if p.ndim < 2 or _leaf(name).startswith("b"):
            p.zero_()
        elif _leaf(name) in ("W_O", "W_out"):
            p.normal_(0.0, model.cfg.init_std / math.sqrt(2 * model.cfg.n_layers), generator=generator)
        else:
            p.normal_(0.0, model.cfg.init_std, generator=generator)


@bank.mistake(
    "the global random generator",
    "draw every random number from the `generator` argument (generator=generator), so the same seed gives the "
    "same model",
)
@torch.no_grad()
def init_global_rng(model, generator):
    for name, p in model.named_parameters():
        if _leaf(name) == "w":
            p.fill_(1.0)
        elif _leaf(name).startswith("b"):
            p.zero_()
        elif _leaf(name) in ("W_O", "W_out"):
            p.normal_(0.0, model.cfg.init_std / math.sqrt(2 * model.cfg.n_layers))
        else:
            p.normal_(0.0, model.cfg.init_std)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.nn.init with a generator, over the modules' own parameters")
@torch.no_grad()
def _init_nn_init(model, generator):
    std, n_layers = model.cfg.init_std, model.cfg.n_layers
    for name, p in model.named_parameters():
        leaf = name.split(".")[-1]
        if leaf == "w":
            torch.nn.init.ones_(p)
        elif leaf in ("b", "b_Q", "b_K", "b_V", "b_O", "b_in", "b_out"):
            torch.nn.init.zeros_(p)
        else:
            scale = 1 / math.sqrt(2 * n_layers) if leaf in ("W_O", "W_out") else 1.0
            torch.nn.init.normal_(p, mean=0.0, std=std * scale, generator=generator)


@bank.alternative("sorted names, randn times the standard deviation, copied in")
def _init_sorted(model, generator):
    residual_std = model.cfg.init_std * (2 * model.cfg.n_layers) ** -0.5
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            leaf = name.rsplit(".", 1)[-1]
            if leaf.startswith("W"):
                std = residual_std if leaf in ("W_O", "W_out") else model.cfg.init_std
                p.copy_(torch.randn(p.shape, generator=generator, dtype=p.dtype) * std)
            else:
                p.copy_(torch.ones_like(p) if leaf == "w" else torch.zeros_like(p))


@bank.alternative("a standard deviation per name, torch.normal, data assigned")
def _init_table(model, generator):
    cfg = model.cfg
    stds = {"W_O": cfg.init_std / math.sqrt(2 * cfg.n_layers), "W_out": cfg.init_std / math.sqrt(2 * cfg.n_layers)}
    for name, p in model.named_parameters():
        leaf = name.split(".")[-1]
        if leaf.startswith("W"):
            p.data = torch.normal(0.0, stds.get(leaf, cfg.init_std), p.shape, generator=generator)
        else:
            p.data = torch.full_like(p, 1.0 if leaf == "w" else 0.0)


INIT_WEIGHTS = Exercise(
    name="init_weights",
    reference=init_weights,
    cases=_init_cases,
    run=_run_init,
    compare=_compare,
    run_in_kernel=True,  # run reads what the call did to the model, so it runs beside the student's code
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Sort the parameters into four kinds by their names: LayerNorm scales, biases, the two matrices that write "
        "into the residual stream, and every other matrix or embedding. Each kind has its own starting value.",
        "Loop over model.named_parameters(); the last part of a name (after the last dot) says the kind. Fill in "
        "place (fill_, zero_, normal_ with generator=generator); the two writers' standard deviation is "
        "cfg.init_std / sqrt(2 * cfg.n_layers).",
    ],
)
EXERCISES = {INIT_WEIGHTS.name: INIT_WEIGHTS}


def check_init_weights(fn):
    """Check a student's ``init_weights(model, generator)``."""
    return INIT_WEIGHTS.check(fn)
