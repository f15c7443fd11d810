"""Wrong answers to the exercises of notebooks 05-09 that the checks used to accept, each rejected now.

Each was written as a student might (issue #24 point 7) and passed the public check and both hidden
seeds, because no case took the branch it gets wrong: an expert that no token chooses, a model
config with biases on a mixture of experts, a sampled run past the context. The mistakes that a
student plausibly makes are also named in their exercise's bank (with a hint), where
``tests/test_checks.py`` tests them; the ones here have no hint of their own, and must still fail,
on every seed, with the generic difference or an error.
"""

from __future__ import annotations

import pytest
import torch

from course_utils.counting import parameters as counting
from course_utils.checks import get_exercise
from course_utils.checks.core import PASSED
from course_utils.sampling import sample_next_token


# -- model_parameter_count: configs no case used ----------------------------------------------------
def _model_count(cfg, *, none_norm_as_rms=False, full_width_kv_bias=False, experts_gated=False):
    b, d, width = int(cfg.bias), cfg.d_model, cfg.mlp_width
    d_kv = d if full_width_kv_bias else cfg.kv_heads * cfg.d_head
    attention = 2 * d * d + 2 * d * cfg.kv_heads * cfg.d_head + b * (2 * d + 2 * d_kv)
    gated = cfg.gated or (experts_gated and cfg.n_experts > 1)
    mlp = (3 if gated else 2) * d * width + b * ((2 if gated else 1) * width + d)
    router = d * cfg.n_experts if cfg.n_experts > 1 else 0
    if none_norm_as_rms:
        norm = d * (1 + b) if cfg.norm == "layernorm" else d
    else:
        norm = {"layernorm": d * (1 + b), "rmsnorm": d, "none": 0}[cfg.norm]
    embeddings = cfg.d_vocab * d * (1 if cfg.tie_embeddings else 2)
    positions = cfg.n_ctx * d if cfg.positions == "learned" else 0
    return embeddings + positions + cfg.n_layers * (attention + cfg.n_experts * mlp + router + 2 * norm) + norm


def count_none_norm_as_rmsnorm(cfg):
    return _model_count(cfg, none_norm_as_rms=True)


def count_full_width_kv_biases(cfg):
    return _model_count(cfg, full_width_kv_bias=True)


def count_experts_always_gated(cfg):
    return _model_count(cfg, experts_gated=True)


# -- sample_tokens: a sampled run past the context --------------------------------------------------
def _sample(model, prompt, n_new, temperature, generator, window, divide_first=False):
    ids = prompt
    for _ in range(n_new):
        logits = model(window(ids, model.cfg.n_ctx))[:, -1]
        if divide_first and temperature > 0:
            logits = logits / temperature  # sample_next_token divides by the temperature again
        ids = torch.cat([ids, sample_next_token(logits, temperature, generator=generator)[:, None]], dim=1)
    return ids


def sample_window_one_short(model, prompt, n_new, temperature, generator):
    return _sample(model, prompt, n_new, temperature, generator, lambda ids, n: ids[:, -(n - 1) :])


def sample_temperature_twice(model, prompt, n_new, temperature, generator):
    return _sample(model, prompt, n_new, temperature, generator, lambda ids, n: ids[:, -n:], divide_first=True)


# -- load_balancing_loss: an expert no token chooses ------------------------------------------------
def balance_bincount_without_minlength(router_logits, k, alpha=0.01):
    n_tokens, n_experts = router_logits.shape
    probs = torch.softmax(router_logits, dim=-1)
    counts = torch.bincount(probs.topk(k, dim=-1).indices.flatten())  # one shorter when the last expert is idle
    return alpha * n_experts * torch.sum(counts.to(probs.dtype) / (n_tokens * k) * probs.mean(0))


# -- dispatch_and_combine: an expert chosen by a single token ---------------------------------------
def dispatch_skips_single_token_experts(x, indices, gates, experts):
    out = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        rows, slots = torch.nonzero(indices == e, as_tuple=True)
        if len(rows) > 1:
            out.index_add_(0, rows, gates[rows, slots].unsqueeze(-1) * expert(x[rows]))
    return out


# -- feature_dimensionality: more than one leading axis ---------------------------------------------
def dimensionality_with_bmm(W):
    W3 = W.unsqueeze(0) if W.ndim == 2 else W  # torch.bmm takes exactly one batch axis
    norms = W3.norm(dim=1, keepdim=True)
    out = norms.squeeze(1) ** 2 / torch.bmm((W3 / norms).transpose(1, 2), W3).square().sum(-1)
    return out[0] if W.ndim == 2 else out


WRONG = [
    ("model_parameter_count", count_none_norm_as_rmsnorm),
    ("model_parameter_count", count_full_width_kv_biases),
    ("model_parameter_count", count_experts_always_gated),
    ("sample_tokens", sample_window_one_short),
    ("sample_tokens", sample_temperature_twice),
    ("load_balancing_loss", balance_bincount_without_minlength),
    ("dispatch_and_combine", dispatch_skips_single_token_experts),
    ("feature_dimensionality", dimensionality_with_bmm),
]


@pytest.mark.parametrize("name,impl", WRONG, ids=[f"{n}-{impl.__name__}" for n, impl in WRONG])
def test_a_wrong_answer_fails_on_every_seed(name, impl):
    exercise = get_exercise(name)
    verdicts = [exercise.check(impl, seed=seed) for seed in (0, 1, 2)]
    assert all(v.status != PASSED for v in verdicts), [str(v) for v in verdicts]


def test_the_wrong_answers_are_right_where_the_old_cases_looked():
    """Each wrong answer agrees with the reference on a config the old cases used, so the test above is
    about the new cases, not a typo here: a GPT-2-style model, the default-eps path, a used expert."""
    gpt2_like = counting.ModelConfig(d_vocab=1000, n_ctx=64, d_model=48, n_layers=3, n_heads=6)
    reference = get_exercise("model_parameter_count").reference
    for wrong in (count_none_norm_as_rmsnorm, count_full_width_kv_biases, count_experts_always_gated):
        assert wrong(gpt2_like) == reference(gpt2_like)
    logits = torch.randn(16, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    expected = get_exercise("load_balancing_loss").reference(logits, 2, 0.1)
    assert torch.allclose(balance_bincount_without_minlength(logits, 2, 0.1), expected)
    W = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    for w in (W, W[0]):  # one instance axis or none
        assert torch.allclose(dimensionality_with_bmm(w), get_exercise("feature_dimensionality").reference(w))
