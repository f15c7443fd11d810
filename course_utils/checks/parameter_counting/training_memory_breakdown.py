"""Exercise ``training_memory_breakdown(cfg, seq_len, batch, recompute)``: the bytes of one training step
in mixed precision with Adam, part by part.

Required form (stated in the notebook): a dict with the keys ``weights``, ``gradients``,
``master_weights``, ``adam_m``, ``adam_v``, ``activations`` and ``total``, in bytes: bf16 weights and
gradients (2 bytes a parameter), float32 master weights and moments (4 each), and every layer's
activations by Korthikanti et al.'s count for a GPT-style block with dropout and any ``d_mlp``
(``18sbh + 4sb·d_mlp + 5as²b``; ``"selective"`` drops ``5as²b``, ``"full"`` keeps ``2sbh``).
"""

from __future__ import annotations

import random

from course_utils.counting import compute, parameters as counting, memory
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.counting.parameters import ModelConfig


def training_memory_breakdown(cfg: ModelConfig, seq_len: int, batch: int, recompute: str) -> dict[str, int]:
    """Reference: ``memory.training_bytes`` (Adam's state tested against a real optimizer, the activations
    against the bytes autograd saves)."""
    return memory.training_bytes(cfg, seq_len, batch, recompute)


def _cases(seed: int) -> list[Case]:
    sizes = [(1024, 8), (512, 4), (2048, 1), (256, 16)]
    narrow = ModelConfig(d_vocab=32000, n_ctx=512, d_model=512, n_layers=6, n_heads=8, d_mlp=1536)
    if seed:  # hidden cases: sizes drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        sizes = [(rng.randint(1, 16) * 64, rng.randint(1, 16)) for _ in range(4)]
        narrow = narrow.with_(n_layers=rng.randint(2, 12), d_mlp=rng.choice((768, 1024, 1536, 2560)))
    configs = [
        ("GPT-2 small", counting.GPT2_SMALL, "none"),
        (f"d_model 512, d_mlp {narrow.mlp_width:,}, {narrow.n_layers} layers", narrow, "none"),
        ("GPT-3 175B, selective recomputation", counting.GPT3_175B, "selective"),
        ("GPT-2 medium, full recomputation", counting.PRESETS["GPT-2 medium"], "full"),
    ]
    return [
        Case(f"{label}, {b} sequences of {s:,}", (cfg, s, b, recompute))
        for (label, cfg, recompute), (s, b) in zip(configs, sizes)
    ]


def _state(cfg, precision="mixed"):
    return compute.training_memory(counting.count_parameters(cfg)["total"], precision)


def _assembled(state, activations):
    parts = {key: value for key, value in state.items() if key != "total"}
    parts["activations"] = activations
    return {**parts, "total": sum(parts.values())}


def _layers(cfg, seq_len, batch, recompute):
    return cfg.n_layers * memory.activation_bytes_per_layer(cfg, seq_len, batch, recompute=recompute)["total"]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "no master copy",
    "mixed precision keeps a float32 master copy of the weights for the optimizer to update: 4 more bytes a parameter",
)
def _no_master(cfg, seq_len, batch, recompute):
    return _assembled({**_state(cfg), "master_weights": 0}, _layers(cfg, seq_len, batch, recompute))


@bank.mistake(
    "everything in float32",
    "in mixed precision the weights and gradients are bf16 (2 bytes); the master copy and both moments are float32",
)
def _all_float32(cfg, seq_len, batch, recompute):
    return _assembled(_state(cfg, "float32"), _layers(cfg, seq_len, batch, recompute))


@bank.mistake(
    "one layer's activations", "every layer keeps its own activations: multiply one layer's bytes by n_layers"
)
def _one_layer(cfg, seq_len, batch, recompute):
    return _assembled(_state(cfg), _layers(cfg, seq_len, batch, recompute) // cfg.n_layers)


@bank.mistake(
    "34sbh whatever d_mlp",
    "34sbh assumes d_mlp = 4 · d_model: the MLP's hidden activations are 4sb · d_mlp bytes, plus 18sbh for the rest",
)
def _always_34(cfg, seq_len, batch, recompute):
    s, b, h, a = seq_len, batch, cfg.d_model, cfg.n_heads
    per_layer = {"none": 34 * s * b * h + 5 * a * s * s * b, "selective": 34 * s * b * h, "full": 2 * s * b * h}
    return _assembled(_state(cfg), cfg.n_layers * per_layer[recompute])


@bank.mistake(
    "recomputation ignored",
    "recomputation changes what is kept: selective drops the 5as²b of the scores, full keeps only each layer's "
    "input (2sbh)",
)
def _recompute_ignored(cfg, seq_len, batch, recompute):
    return _assembled(_state(cfg), _layers(cfg, seq_len, batch, "none"))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("bytes per parameter in a table, per token per layer")
def _alt_table(cfg, seq_len, batch, recompute):
    n = counting.count_parameters(cfg)["total"]
    bytes_per = {"weights": 2, "gradients": 2, "master_weights": 4, "adam_m": 4, "adam_v": 4}
    parts = {key: size * n for key, size in bytes_per.items()}
    per_token = {
        "none": 18 * cfg.d_model + 4 * cfg.mlp_width + 5 * cfg.n_heads * seq_len,
        "selective": 18 * cfg.d_model + 4 * cfg.mlp_width,
        "full": 2 * cfg.d_model,
    }[recompute]
    parts["activations"] = cfg.n_layers * seq_len * batch * per_token
    parts["total"] = sum(parts.values())
    return parts


@bank.alternative("attention, MLP and norms apart, in floats")
def _alt_parts(cfg, seq_len, batch, recompute):
    n = float(counting.count_parameters(cfg)["total"])
    sb, h, a = float(seq_len * batch), cfg.d_model, cfg.n_heads
    scores = 5.0 * a * seq_len * seq_len * batch if recompute == "none" else 0.0
    layer = 11 * sb * h + scores + 3 * sb * h + 4 * sb * cfg.mlp_width + 4 * sb * h
    activations = cfg.n_layers * (2 * sb * h if recompute == "full" else layer)
    parts = dict(weights=2 * n, gradients=2 * n, master_weights=4 * n, adam_m=4 * n, adam_v=4 * n)
    return {**parts, "activations": activations, "total": 16 * n + activations}


@bank.alternative("the course's two functions")
def _alt_library(cfg, seq_len, batch, recompute):
    return _assembled(_state(cfg), _layers(cfg, seq_len, batch, recompute))


TRAINING_MEMORY = Exercise(
    name="training_memory_breakdown",
    reference=training_memory_breakdown,
    cases=_cases,
    tolerance="exact",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two independent parts: what every parameter costs (five copies, each with its own number of bytes), and "
        "what every layer keeps for the backward pass, which depends on the sequence, the batch and recomputation.",
        "Mixed precision: 2 + 2 bytes for the bf16 weights and gradients, 4 + 4 + 4 for the float32 master copy "
        "and moments. Per layer: 18sbh + 4sb·d_mlp, plus 5as²b for the scores unless they are recomputed.",
    ],
)
EXERCISES = {TRAINING_MEMORY.name: TRAINING_MEMORY}


def check_training_memory_breakdown(fn):
    """Check a student's ``training_memory_breakdown(cfg, seq_len, batch, recompute)``."""
    return TRAINING_MEMORY.check(fn)
