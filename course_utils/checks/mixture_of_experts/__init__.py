"""Checks for notebook 07 (mixture of experts), one file per exercise:

- ``top_k_router``: each token's k most likely experts and their gates, renormalised to sum to 1;
- ``dispatch_and_combine``: send each token to its k experts, add back their gate-weighted outputs;
- ``load_balancing_loss``: the Switch auxiliary loss α · E · Σᵢ fᵢ · Pᵢ, its gradient followed back to
  the router logits (a loss that never reaches the router fails even when its value is right).

``_cases`` holds the seeded router logits all three build their inputs from.
"""

from course_utils.checks.mixture_of_experts.dispatch_and_combine import (
    DISPATCH_AND_COMBINE,
    check_dispatch_and_combine,
)
from course_utils.checks.mixture_of_experts.load_balancing_loss import LOAD_BALANCING_LOSS, check_load_balancing_loss
from course_utils.checks.mixture_of_experts.top_k_router import TOP_K_ROUTER, check_top_k_router

EXERCISES = {ex.name: ex for ex in (TOP_K_ROUTER, DISPATCH_AND_COMBINE, LOAD_BALANCING_LOSS)}

__all__ = [
    "DISPATCH_AND_COMBINE",
    "EXERCISES",
    "LOAD_BALANCING_LOSS",
    "TOP_K_ROUTER",
    "check_dispatch_and_combine",
    "check_load_balancing_loss",
    "check_top_k_router",
]
