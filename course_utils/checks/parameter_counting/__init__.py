"""Checks for notebook 08 (parameter counting and compute), one file per exercise:

- ``attention_parameter_count``: one layer's attention parameters (biases, grouped-query attention);
- ``mlp_parameter_count``: one MLP's parameters, plain or gated;
- ``parameters_by_category``: a built ``Decoder``'s parameters by category, from ``named_parameters``;
- ``model_parameter_count``: a whole model from a ``ModelConfig`` (all experts, tied matrices once);
- ``training_flops_estimate``: the 6ND training-FLOP estimate (compared at float32 precision);
- ``flops_by_operation``: a token's forward FLOPs by operation (Kaplan et al.'s Table 1), exactly;
- ``training_memory_breakdown``: the bytes of a mixed-precision Adam step, activations included, exactly.

Answers are whole numbers (FLOPs aside); the references come from ``course_utils.counting.parameters`` and
``course_utils.counting.compute``, themselves tested against real modules. ``_layers`` holds what the two
one-layer exercises share.
"""

from course_utils.checks.parameter_counting.attention_parameter_count import (
    ATTENTION,
    check_attention_parameter_count,
)
from course_utils.checks.parameter_counting.flops_by_operation import FLOPS_BY_OPERATION, check_flops_by_operation
from course_utils.checks.parameter_counting.mlp_parameter_count import MLP, check_mlp_parameter_count
from course_utils.checks.parameter_counting.model_parameter_count import MODEL, check_model_parameter_count
from course_utils.checks.parameter_counting.parameters_by_category import (
    PARAMETERS_BY_CATEGORY,
    check_parameters_by_category,
)
from course_utils.checks.parameter_counting.training_flops_estimate import FLOPS, check_training_flops_estimate
from course_utils.checks.parameter_counting.training_memory_breakdown import (
    TRAINING_MEMORY,
    check_training_memory_breakdown,
)

_IN_NOTEBOOK_ORDER = (ATTENTION, MLP, PARAMETERS_BY_CATEGORY, MODEL, FLOPS, FLOPS_BY_OPERATION, TRAINING_MEMORY)
EXERCISES = {ex.name: ex for ex in _IN_NOTEBOOK_ORDER}

__all__ = [
    "ATTENTION",
    "EXERCISES",
    "FLOPS",
    "FLOPS_BY_OPERATION",
    "MLP",
    "MODEL",
    "PARAMETERS_BY_CATEGORY",
    "TRAINING_MEMORY",
    "check_attention_parameter_count",
    "check_flops_by_operation",
    "check_mlp_parameter_count",
    "check_model_parameter_count",
    "check_parameters_by_category",
    "check_training_flops_estimate",
    "check_training_memory_breakdown",
]
