"""Checks for notebook 06 (the MLP and superposition), one file per exercise:

- ``mlp_with_residual``: x + MLP(x) at every position, with the tanh-approximate GELU;
- ``gelu_tanh``: the tanh-approximate GELU, elementwise;
- ``angle_deviation_summary``: [RMS, max] of how far each pair of vectors is from 90°, in degrees;
- ``welch_bound``: the least possible largest |cos θ| of n unit vectors in d dimensions;
- ``toy_model_forward``: the toy model of superposition, ReLU(Wᵀ W x + b), instances kept apart;
- ``importance_weighted_loss``: its loss, one number per instance;
- ``feature_dimensionality``: how much of a dimension each feature (column of W) gets.
"""

from course_utils.checks.mlp_superposition.angle_deviation_summary import (
    ANGLE_DEVIATION_SUMMARY,
    check_angle_deviation_summary,
)
from course_utils.checks.mlp_superposition.feature_dimensionality import (
    FEATURE_DIMENSIONALITY,
    check_feature_dimensionality,
)
from course_utils.checks.mlp_superposition.gelu_tanh import GELU_TANH, check_gelu_tanh
from course_utils.checks.mlp_superposition.importance_weighted_loss import (
    IMPORTANCE_WEIGHTED_LOSS,
    check_importance_weighted_loss,
)
from course_utils.checks.mlp_superposition.mlp_with_residual import MLP_WITH_RESIDUAL, check_mlp_with_residual
from course_utils.checks.mlp_superposition.toy_model_forward import TOY_MODEL_FORWARD, check_toy_model_forward
from course_utils.checks.mlp_superposition.welch_bound import WELCH_BOUND, check_welch_bound

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

__all__ = [
    "ANGLE_DEVIATION_SUMMARY",
    "EXERCISES",
    "FEATURE_DIMENSIONALITY",
    "GELU_TANH",
    "IMPORTANCE_WEIGHTED_LOSS",
    "MLP_WITH_RESIDUAL",
    "TOY_MODEL_FORWARD",
    "WELCH_BOUND",
    "check_angle_deviation_summary",
    "check_feature_dimensionality",
    "check_gelu_tanh",
    "check_importance_weighted_loss",
    "check_mlp_with_residual",
    "check_toy_model_forward",
    "check_welch_bound",
]
