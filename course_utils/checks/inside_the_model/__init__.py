"""Checks for notebook 13 (inside the trained model), one file per exercise:

- ``logit_lens``: the stream after the embedding and after every block, decoded by the final LayerNorm and the
  unembedding, against ``course_utils.interp.lens_logits``;
- ``logit_attribution``: ``split_logit_difference``, a logit difference split into the writes' direct parts
  with the final LayerNorm's scale frozen (the formula of ``interp.direct_logit_attribution``);
- ``patch_residual``: ``patched_logits``, a forward pass with one position's stream entering one block taken
  from the clean run, against ``interp.run_with_patches``;
- ``k_composition``: ``k_composition_score``, Elhage et al.'s K-composition of an earlier head's OV map with a
  later head's QK map, against ``interp.composition_score``;
- ``sae_metrics``: L0, variance explained, dead fraction and mean norm ratio of a sparse autoencoder's output.

``_cases`` holds the seeded tiny GPT the model-based exercises share.
"""

from course_utils.checks.inside_the_model.k_composition import K_COMPOSITION, check_k_composition
from course_utils.checks.inside_the_model.logit_attribution import LOGIT_ATTRIBUTION, check_logit_attribution
from course_utils.checks.inside_the_model.logit_lens import LOGIT_LENS, check_logit_lens
from course_utils.checks.inside_the_model.patch_residual import PATCH_RESIDUAL, check_patch_residual
from course_utils.checks.inside_the_model.sae_metrics import SAE_METRICS, check_sae_metrics

EXERCISES = {ex.name: ex for ex in (LOGIT_LENS, LOGIT_ATTRIBUTION, PATCH_RESIDUAL, K_COMPOSITION, SAE_METRICS)}

__all__ = [
    "EXERCISES",
    "K_COMPOSITION",
    "LOGIT_ATTRIBUTION",
    "LOGIT_LENS",
    "PATCH_RESIDUAL",
    "SAE_METRICS",
    "check_k_composition",
    "check_logit_attribution",
    "check_logit_lens",
    "check_patch_residual",
    "check_sae_metrics",
]
