"""Checks for notebook 07 (mixture of experts), one file per exercise:

- ``top_k_router``: each token's k most likely experts and their gates, renormalised to sum to 1;
- ``dispatch_and_combine``: send each token to its k experts, add back their gate-weighted outputs;
- ``moe_forward``: the whole layer on stacked SwiGLU weights (router, top-k renormalised gates, grouped
  dispatch, combine), checked against the course's ``moe.MoE`` holding the same weights;
- ``load_balancing_loss``: the Switch auxiliary loss α · E · Σᵢ fᵢ · Pᵢ, its gradient followed back to
  the router logits (a loss that never reaches the router fails even when its value is right).

``_cases`` holds the seeded router logits the router, dispatch and balancing exercises build their inputs from.
"""

from course_utils.checks.mixture_of_experts.dispatch_and_combine import (
    DISPATCH_AND_COMBINE,
    check_dispatch_and_combine,
)
from course_utils.checks.mixture_of_experts.load_balancing_loss import LOAD_BALANCING_LOSS, check_load_balancing_loss
from course_utils.checks.mixture_of_experts.moe_forward import MOE_FORWARD, check_moe_forward
from course_utils.checks.mixture_of_experts.top_k_router import TOP_K_ROUTER, check_top_k_router

EXERCISES = {ex.name: ex for ex in (TOP_K_ROUTER, DISPATCH_AND_COMBINE, MOE_FORWARD, LOAD_BALANCING_LOSS)}

__all__ = [
    "DISPATCH_AND_COMBINE",
    "EXERCISES",
    "LOAD_BALANCING_LOSS",
    "MOE_FORWARD",
    "TOP_K_ROUTER",
    "check_dispatch_and_combine",
    "check_load_balancing_loss",
    "check_moe_forward",
    "check_top_k_router",
]
