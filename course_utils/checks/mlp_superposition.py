"""Checks for notebook 06 (the MLP and superposition): the MLP with its residual, tanh-GELU, the
angle statistics of a batch of vectors, the Welch bound, the toy model's forward pass and loss, and
feature dimensionality. Each exercise carries typical mistakes and differently written correct answers."""

from __future__ import annotations

import math

import torch

from course_utils import mlp, superposition, toy_models
from course_utils.checks._mlp_superposition_banks import (  # the mistakes and alternatives below
    _angles_arcsin,
    _angles_loop_f32,
    _angles_mean_abs,
    _angles_pdist,
    _angles_radians,
    _angles_unnormalised,
    _angles_with_diagonal,
    _dim_both_normalised,
    _dim_einsum,
    _dim_excludes_self,
    _dim_loop_f32,
    _dim_norm_not_squared,
    _dim_quartic,
    _dim_wrong_axis,
    _gelu_builtin,
    _gelu_exact,
    _gelu_no_half,
    _gelu_numpy_f32,
    _gelu_sigmoid,
    _gelu_square,
    _gelu_wrong_constant,
    _loss_einsum,
    _loss_f32_mse,
    _loss_importance_squared,
    _loss_mean_features,
    _loss_no_importance,
    _loss_reordered,
    _loss_sum_batch,
    _mlp_bias_after_act,
    _mlp_einsum,
    _mlp_exact_gelu,
    _mlp_float32_flat,
    _mlp_linear,
    _mlp_no_residual,
    _mlp_relu,
    _toy_bias_after_relu,
    _toy_gram,
    _toy_loop_f32,
    _toy_matmul,
    _toy_no_bias,
    _toy_no_relu,
    _welch_max,
    _welch_no_sqrt,
    _welch_numpy,
    _welch_numpy_no_case,
    _welch_swapped,
    _welch_torch,
)
from course_utils.checks.core import Alternative, Case, Exercise, Mistake

F64 = torch.float64
_C = math.sqrt(2.0 / math.pi)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# -- the MLP with its residual --------------------------------------------------------------------


def mlp_with_residual(x, W_in, b_in, W_out, b_out):
    """Reference: x + gelu_tanh(x @ W_in + b_in) @ W_out + b_out, at every position."""
    return x + mlp.mlp_forward(x, W_in, b_in, W_out, b_out, "gelu_tanh")


def _mlp_cases(seed: int) -> list[Case]:
    gen = _gen(seed)
    cases = []
    for label, shape, d_mlp in (
        ("batch 2, 5 positions, d_model 6, d_mlp 24", (2, 5, 6), 24),
        ("batch 1, 3 positions, d_model 4, d_mlp 10", (1, 3, 4), 10),
        ("one position, d_model 8, d_mlp 32", (1, 1, 8), 32),
    ):
        d_model = shape[-1]
        x = torch.randn(*shape, generator=gen, dtype=F64)
        W_in = torch.randn(d_model, d_mlp, generator=gen, dtype=F64) * (
            2.5 / math.sqrt(d_model)
        )  # pre-activations of size ~2.5
        b_in = torch.randn(d_mlp, generator=gen, dtype=F64)
        W_out = torch.randn(d_mlp, d_model, generator=gen, dtype=F64) / math.sqrt(d_mlp)
        b_out = torch.randn(d_model, generator=gen, dtype=F64)
        cases.append(Case(label, (x, W_in, b_in, W_out, b_out)))
    return cases


MLP_WITH_RESIDUAL = Exercise(
    name="mlp_with_residual",
    reference=mlp_with_residual,
    cases=_mlp_cases,
    mistakes=[
        Mistake(
            "no residual",
            _mlp_no_residual,
            "the block adds the MLP's output back to its input: return x plus the MLP of x",
        ),
        Mistake(
            "exact GELU",
            _mlp_exact_gelu,
            "close, but this is the exact (erf) GELU; GPT-2's MLP uses the tanh approximation",
        ),
        Mistake("ReLU", _mlp_relu, "ReLU is the textbook nonlinearity; this MLP uses the tanh-approximate GELU"),
        Mistake(
            "bias after the activation",
            _mlp_bias_after_act,
            "b_in belongs inside the nonlinearity: add it to x @ W_in before the activation",
        ),
    ],
    alternatives=[
        Alternative("einsum", _mlp_einsum),
        Alternative("F.linear with transposed weights", _mlp_linear),
        Alternative("float32, positions flattened, addmm", _mlp_float32_flat),
    ],
    hints=[
        "Four steps, each applied to every position on its own: project up, nonlinearity, project down, add back.",
        "The up-projection's bias is added before the activation; the output of the down-projection "
        "(plus b_out) is added to the original x.",
    ],
)


# -- tanh-approximate GELU ------------------------------------------------------------------------


def gelu_tanh(x):
    """Reference: 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))."""
    return mlp.gelu_tanh(x)


def _gelu_cases(seed: int) -> list[Case]:
    gen = _gen(seed)
    return [
        Case("x = 201 points from −6 to 6", (torch.linspace(-6, 6, 201, dtype=F64),)),
        Case("x of shape (3, 4, 5), standard normal × 2", (2 * torch.randn(3, 4, 5, generator=gen, dtype=F64),)),
    ]


GELU_TANH = Exercise(
    name="gelu_tanh",
    reference=gelu_tanh,
    cases=_gelu_cases,
    mistakes=[
        Mistake("sqrt(pi/2)", _gelu_wrong_constant, "the constant inside tanh is sqrt(2/π) ≈ 0.798, not sqrt(π/2)"),
        Mistake("no one half", _gelu_no_half, "for large x GELU(x) ≈ x: the factor (1 + tanh) needs the 0.5 in front"),
        Mistake(
            "x squared", _gelu_square, "the correction term is 0.044715 · x cubed (odd, like tanh's argument should be)"
        ),
        Mistake(
            "exact GELU", _gelu_exact, "that is the exact GELU with erf: this exercise asks for the tanh approximation"
        ),
    ],
    alternatives=[
        Alternative("sigmoid identity", _gelu_sigmoid),
        Alternative("F.gelu(approximate='tanh')", _gelu_builtin),
        Alternative("NumPy float32", _gelu_numpy_f32),
    ],
    hints=[
        "GELU is x times the chance that a standard normal is below x; the approximation replaces "
        "that normal CDF by a tanh curve.",
        "Inside the tanh: a constant sqrt(2/π) times (x plus a small multiple of x cubed). "
        "Outside: one half times x times (1 + tanh).",
    ],
)


# -- angle statistics -----------------------------------------------------------------------------


def angle_deviation_summary(vectors):
    """Reference: [RMS, max] of |angle − 90°| in degrees over all pairs i < j."""
    return superposition.angle_deviation_summary(vectors)


def _angle_cases(seed: int) -> list[Case]:
    gen = _gen(seed)
    cases = []
    for n, d in ((40, 10), (25, 3), (60, 100)):
        v = torch.randn(n, d, generator=gen, dtype=F64) * (
            0.5 + 3 * torch.rand(n, 1, generator=gen, dtype=F64)
        )  # not unit length
        cases.append(Case(f"{n} vectors in {d} dimensions (not unit length)", (v,)))
    return cases


ANGLE_DEVIATION_SUMMARY = Exercise(
    name="angle_deviation_summary",
    reference=angle_deviation_summary,
    cases=_angle_cases,
    mistakes=[
        Mistake(
            "diagonal included",
            _angles_with_diagonal,
            "a vector paired with itself is 0° apart (90° off perpendicular): keep only pairs i < j",
        ),
        Mistake(
            "not normalised",
            _angles_unnormalised,
            "a dot product is a cosine only for unit vectors: divide each row by its length first",
        ),
        Mistake("radians", _angles_radians, "report the deviations in degrees, not radians"),
        Mistake(
            "mean absolute",
            _angles_mean_abs,
            "the typical deviation asked for is the root-mean-square (square, average, square root), "
            "not the mean of |deviation|",
        ),
    ],
    alternatives=[
        Alternative("arcsin of the upper triangle", _angles_arcsin),
        Alternative("torch.pdist", _angles_pdist),
        Alternative("float32 loop over pairs, NumPy result", _angles_loop_f32),
    ],
    hints=[
        "All cosines at once come from one matrix product of the normalised vectors with their transpose.",
        "Take each pair once (strictly above the diagonal), turn cosines into angles in degrees, "
        "subtract 90, then RMS and the largest absolute value.",
    ],
)


# -- the Welch bound ------------------------------------------------------------------------------


def welch_bound(n, d):
    """Reference: sqrt((n − d) / (d (n − 1))) when n > d, else 0."""
    return superposition.welch_bound(n, d)


def _welch_cases(seed: int) -> list[Case]:
    extra = [(1000 + 97 * seed, 50 + seed), (7 + seed, 7 + seed)]
    return [Case(f"n={n}, d={d}", (n, d)) for n, d in [(3, 2), (4000, 100), (5, 10), *extra, (10**6, 12288)]]


WELCH_BOUND = Exercise(
    name="welch_bound",
    reference=welch_bound,
    cases=_welch_cases,
    mistakes=[
        Mistake(
            "no square root", _welch_no_sqrt, "the bound is on |cos θ| itself: take the square root of the fraction"
        ),
        Mistake(
            "n and d swapped", _welch_swapped, "the denominator is d · (n − 1): dimensions times (vectors minus one)"
        ),
        Mistake(
            "n ≤ d not handled",
            _welch_numpy_no_case,
            "when n ≤ d the vectors can all be orthogonal and the bound is 0 (the fraction would be negative)",
        ),
    ],
    alternatives=[
        Alternative("max(0, ·) with n/d", _welch_max),
        Alternative("torch, 0-d tensor", _welch_torch),
        Alternative("NumPy float32", _welch_numpy),
    ],
    hints=[
        "The bound only bites when there are more vectors than dimensions; "
        "otherwise an orthonormal set has every cosine 0.",
        "It is the square root of (n − d) divided by d times (n − 1).",
    ],
)


# -- the toy model's forward and loss -------------------------------------------------------------


def toy_model_forward(x, W, b_final):
    """Reference: ReLU(Wᵀ W x + b) per instance; x (batch, inst, feat), W (inst, hidden, feat)."""
    return toy_models.toy_model_forward(x, W, b_final)


def _toy_cases(seed: int) -> list[Case]:
    gen = _gen(seed)
    cases = []
    for batch, inst, hidden, feat in ((8, 3, 2, 5), (4, 1, 3, 7), (6, 4, 5, 20)):
        x = torch.rand(batch, inst, feat, generator=gen, dtype=F64) * (
            torch.rand(batch, inst, feat, generator=gen) < 0.5
        )
        W = torch.randn(inst, hidden, feat, generator=gen, dtype=F64) / math.sqrt(hidden)
        b = torch.randn(inst, feat, generator=gen, dtype=F64) * 0.3
        cases.append(Case(f"batch {batch}, {inst} instances, {feat} features in {hidden} dimensions", (x, W, b)))
    return cases


TOY_MODEL_FORWARD = Exercise(
    name="toy_model_forward",
    reference=toy_model_forward,
    cases=_toy_cases,
    mistakes=[
        Mistake(
            "no ReLU",
            _toy_no_relu,
            "the output goes through a ReLU: without it the model cannot filter out interference",
        ),
        Mistake(
            "bias after the ReLU",
            _toy_bias_after_relu,
            "add b_final before the ReLU: the negative bias is what cuts off small interference",
        ),
        Mistake("no bias", _toy_no_bias, "don't forget b_final (one per instance and feature)"),
    ],
    alternatives=[
        Alternative("batched matmul", _toy_matmul),
        Alternative("WᵀW first", _toy_gram),
        Alternative("float32 loop over instances with F.linear", _toy_loop_f32),
    ],
    hints=[
        "Every instance is its own little model; an einsum with the instance letter on both sides keeps them apart.",
        "Down to the hidden space with W (sum over features), back up with W transposed (sum over hidden), "
        "add the bias, then ReLU.",
    ],
)


def importance_weighted_loss(x, x_hat, importance):
    """Reference: per instance, mean over the batch of Σ_features importance · (x − x̂)²."""
    return toy_models.importance_weighted_loss(x, x_hat, importance)


def _loss_cases(seed: int) -> list[Case]:
    gen = _gen(seed)
    cases = []
    for batch, inst, feat in ((8, 3, 5), (16, 2, 20), (5, 4, 6)):
        x = torch.rand(batch, inst, feat, generator=gen, dtype=F64)
        x_hat = torch.rand(batch, inst, feat, generator=gen, dtype=F64)
        importance = 0.5 + torch.rand(inst, feat, generator=gen, dtype=F64)
        cases.append(Case(f"batch {batch}, {inst} instances, {feat} features", (x, x_hat, importance)))
    return cases


IMPORTANCE_WEIGHTED_LOSS = Exercise(
    name="importance_weighted_loss",
    reference=importance_weighted_loss,
    cases=_loss_cases,
    mistakes=[
        Mistake("no importance", _loss_no_importance, "weight each feature's squared error by its importance"),
        Mistake(
            "mean over features",
            _loss_mean_features,
            "sum over features (each one's weighted error counts in full); average only over the batch",
        ),
        Mistake(
            "importance inside the square",
            _loss_importance_squared,
            "multiply the squared error by the importance; don't square the importance too",
        ),
        Mistake(
            "sum over the batch",
            _loss_sum_batch,
            "average over the batch (axis 0) rather than summing it, so the loss does not grow with batch size",
        ),
    ],
    alternatives=[
        Alternative("einsum", _loss_einsum),
        Alternative("mean first, then weighted sum", _loss_reordered),
        Alternative("float32 F.mse_loss per instance", _loss_f32_mse),
    ],
    hints=[
        "The result has one number per instance: which axes get summed, which averaged?",
        "importance · (x − x̂)², summed over the feature axis, then averaged over the batch axis.",
    ],
)


# -- feature dimensionality -----------------------------------------------------------------------


def feature_dimensionality(W):
    """Reference: D_i = ‖W_i‖² / Σ_j (Ŵ_i · W_j)² for W of shape (..., hidden, feat)."""
    return toy_models.feature_dimensionality(W)


def _dim_cases(seed: int) -> list[Case]:
    gen = _gen(seed)
    angles = torch.arange(5, dtype=F64) * 2 * math.pi / 5 + seed
    pentagon = torch.stack([angles.cos(), angles.sin()]) * (0.5 + torch.rand(5, generator=gen, dtype=F64))
    return [
        Case("a pentagon with uneven lengths (hidden 2, feat 5)", (pentagon,)),
        Case("random W of shape (hidden 3, feat 8)", (torch.randn(3, 8, generator=gen, dtype=F64),)),
        Case("batched W of shape (inst 4, hidden 5, feat 12)", (torch.randn(4, 5, 12, generator=gen, dtype=F64),)),
    ]


FEATURE_DIMENSIONALITY = Exercise(
    name="feature_dimensionality",
    reference=feature_dimensionality,
    cases=_dim_cases,
    mistakes=[
        Mistake("norm not squared", _dim_norm_not_squared, "the numerator is the squared length ‖W_i‖², not ‖W_i‖"),
        Mistake(
            "self left out",
            _dim_excludes_self,
            "the sum over j includes j = i (a feature alone in its direction then gets exactly 1)",
        ),
        Mistake(
            "both normalised",
            _dim_both_normalised,
            "normalise only W_i in the dot product: Ŵ_i · W_j keeps W_j's length",
        ),
        Mistake(
            "per hidden unit",
            _dim_wrong_axis,
            "features are the columns of W (last axis); you computed one number per hidden unit (rows)",
        ),
    ],
    alternatives=[
        Alternative("‖W_i‖⁴ / Σ (W_i·W_j)²", _dim_quartic),
        Alternative("einsum", _dim_einsum),
        Alternative("float32 double loop", _dim_loop_f32),
    ],
    hints=[
        "Work feature by feature: how long is W_i, "
        "and how much do all the features (itself included) project onto its direction?",
        "Numerator ‖W_i‖²; denominator the sum over every j of (unit vector of W_i · W_j) squared. "
        "WᵀW-style products give all the dot products at once.",
    ],
)


EXERCISES = {
    ex.name: ex
    for ex in (
        MLP_WITH_RESIDUAL,
        GELU_TANH,
        ANGLE_DEVIATION_SUMMARY,
        WELCH_BOUND,
        TOY_MODEL_FORWARD,
        IMPORTANCE_WEIGHTED_LOSS,
        FEATURE_DIMENSIONALITY,
    )
}


def check_mlp_with_residual(fn):
    """Check a student's ``mlp_with_residual``."""
    return MLP_WITH_RESIDUAL.check(fn)


def check_gelu_tanh(fn):
    """Check a student's ``gelu_tanh``."""
    return GELU_TANH.check(fn)


def check_angle_deviation_summary(fn):
    """Check a student's ``angle_deviation_summary``."""
    return ANGLE_DEVIATION_SUMMARY.check(fn)


def check_welch_bound(fn):
    """Check a student's ``welch_bound``."""
    return WELCH_BOUND.check(fn)


def check_toy_model_forward(fn):
    """Check a student's ``toy_model_forward``."""
    return TOY_MODEL_FORWARD.check(fn)


def check_importance_weighted_loss(fn):
    """Check a student's ``importance_weighted_loss``."""
    return IMPORTANCE_WEIGHTED_LOSS.check(fn)


def check_feature_dimensionality(fn):
    """Check a student's ``feature_dimensionality``."""
    return FEATURE_DIMENSIONALITY.check(fn)
