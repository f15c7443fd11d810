"""Exercise ``parameters_by_category(model)``: a real module's parameters, read back into the counter's
categories from ``named_parameters``.

Required form (stated in the notebook): a dict with every key of ``counting.CATEGORIES`` (zeros included)
and ``"total"``; a parameter's category follows the module that holds it (``blocks.0.attn.W_Q.bias`` ->
``"query"``, every norm -> ``"norms"``, a shared tensor once). Checked against
``decoder.count_by_category``, which equals ``counting.count_parameters(cfg)`` for every config. The
models are built on the meta device: shapes, no memory.
"""

from __future__ import annotations

import random
import re

import torch
from torch import nn

from course_utils.counting import parameters as counting
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.counting.decoder import CATEGORY_OF_MODULE, Decoder, count_by_category


def parameters_by_category(model: nn.Module) -> dict[str, int]:
    """Reference: ``decoder.count_by_category``, tested equal to the formula counter on every preset."""
    return count_by_category(model)


def _cases(seed: int) -> list[Case]:
    n_layers, d_vocab = [2, 3, 2], [50257, 128256, 32000]
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        n_layers, d_vocab = [rng.randint(1, 4) for _ in range(3)], [rng.randint(1000, 130_000) for _ in range(3)]
    configs = {
        "GPT-2 small's shape (tied, learned positions, biases, LayerNorm)": counting.GPT2_SMALL,
        "Llama 3 8B's shape (GQA, SwiGLU, RMSNorm, untied)": counting.LLAMA3_8B,
        "Mixtral 8x7B's shape (8 experts and a router per layer)": counting.MIXTRAL_8X7B,
    }
    cases = []
    for (label, cfg), layers, vocab in zip(configs.items(), n_layers, d_vocab):
        with torch.device("meta"):
            model = Decoder(cfg.with_(n_layers=layers, d_vocab=vocab))
        cases.append(Case(f"{label}, {layers} layers, d_vocab {vocab:,}", (model,)))
    return cases


def _counted(pairs) -> dict[str, int]:
    counts = dict.fromkeys(counting.CATEGORIES, 0)
    for category, n in pairs:
        counts[category] += n
    return {**counts, "total": sum(counts.values())}




bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "biases left out", "count every parameter a layer holds: its bias is a parameter too, in the same category"
)
def _weights_only(model):
    return _counted(
        (CATEGORY_OF_MODULE[name.split(".")[-2]], p.numel())
        for name, p in model.named_parameters()
        if name.endswith(".weight")
    )


@bank.mistake("norms left out", "the norms hold parameters too (a gain, and a bias for LayerNorm): count them")
def _no_norms(model):
    return _counted(
        (CATEGORY_OF_MODULE[name.split(".")[-2]], p.numel())
        for name, p in model.named_parameters()
        if not name.split(".")[-2].startswith("norm")
    )


@bank.mistake(
    "router in the MLP",
    "the router (mlp.router) is its own category: it belongs to no expert, and every token uses all of it",
)
def _router_in_mlp(model):
    counts = count_by_category(model)
    return {**counts, "mlp_up": counts["mlp_up"] + counts["router"], "router": 0}


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("a regular expression on the names")
def _alt_regex(model):
    pattern = re.compile(r"(?:^|\.)(W_\w+|router|norm\w*)\.(?:weight|bias)$")
    pairs = []
    for name, p in model.named_parameters():
        holder = pattern.search(name).group(1)
        pairs.append((CATEGORY_OF_MODULE[holder], p.numel()))
    return _counted(pairs)


@bank.alternative("walking the modules, each one's own parameters")
def _alt_modules(model):
    pairs = []
    for module_name, module in model.named_modules():
        own = sum(p.numel() for p in module.parameters(recurse=False))
        if own:
            leaf = module_name.split(".")[-1]
            pairs.append((CATEGORY_OF_MODULE[leaf], own))
    return _counted(pairs)


@bank.alternative("ifs on the name, numbers as floats")
def _alt_ifs(model):
    counts = {category: 0.0 for category in counting.CATEGORIES}
    for name, p in model.named_parameters():
        if "norm" in name:
            counts["norms"] += float(p.numel())
        elif ".router." in name:
            counts["router"] += float(p.numel())
        else:
            counts[CATEGORY_OF_MODULE[name.split(".")[-2]]] += float(p.numel())
    counts["total"] = sum(counts.values())
    return counts


PARAMETERS_BY_CATEGORY = Exercise(
    name="parameters_by_category",
    reference=parameters_by_category,
    cases=_cases,
    tolerance="exact",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Print a few of model.named_parameters() first: the part of each name just before weight or bias says "
        "which layer holds it, and that layer decides the category.",
        "Split each name on dots and look at its second-to-last piece; a small dict from layer names to categories "
        "covers everything except the norms, whose names all start the same way.",
    ],
)
EXERCISES = {PARAMETERS_BY_CATEGORY.name: PARAMETERS_BY_CATEGORY}


def check_parameters_by_category(fn):
    """Check a student's ``parameters_by_category(model)``."""
    return PARAMETERS_BY_CATEGORY.check(fn)
