"""Checks for notebook 06 (the MLP and superposition), one file per exercise:

- ``mlp_with_residual``: x + MLP(x) at every position, with the tanh-approximate GELU;
- ``gelu_tanh``: the tanh-approximate GELU, elementwise;
- ``angle_deviation_summary``: [RMS, max] of how far each pair of vectors is from 90°, in degrees;
- ``welch_bound``: the least possible largest |cos θ| of n unit vectors in d dimensions;
- ``toy_model_forward``: the toy model of superposition, ReLU(Wᵀ W x + b), instances kept apart;
- ``importance_weighted_loss``: its loss, one number per instance;
- ``feature_dimensionality``: how much of a dimension each feature (column of W) gets;
- ``sae_forward``: a sparse autoencoder's latents and reconstruction (unit-length decoder rows);
- ``sae_loss``: its loss, reconstruction error plus l1 times the latents' L1 norm, averaged over the batch;
- ``sae_training_step``: one optimiser step on that loss (checked over three Adam steps against the reference).

``_sae`` holds the seeded activations and SAE weights the three SAE exercises use.
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
from course_utils.checks.mlp_superposition.sae_forward import SAE_FORWARD, check_sae_forward
from course_utils.checks.mlp_superposition.sae_loss import SAE_LOSS, check_sae_loss
from course_utils.checks.mlp_superposition.sae_training_step import SAE_TRAINING_STEP, check_sae_training_step
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
        SAE_FORWARD,
        SAE_LOSS,
        SAE_TRAINING_STEP,
    )
}

__all__ = [
    "ANGLE_DEVIATION_SUMMARY",
    "EXERCISES",
    "FEATURE_DIMENSIONALITY",
    "GELU_TANH",
    "IMPORTANCE_WEIGHTED_LOSS",
    "MLP_WITH_RESIDUAL",
    "SAE_FORWARD",
    "SAE_LOSS",
    "SAE_TRAINING_STEP",
    "TOY_MODEL_FORWARD",
    "WELCH_BOUND",
    "check_angle_deviation_summary",
    "check_feature_dimensionality",
    "check_gelu_tanh",
    "check_importance_weighted_loss",
    "check_mlp_with_residual",
    "check_sae_forward",
    "check_sae_loss",
    "check_sae_training_step",
    "check_toy_model_forward",
    "check_welch_bound",
]
