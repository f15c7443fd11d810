"""Checks for notebook 07 (mixture of experts), one file per exercise:

- ``top_k_router``: each token's k most likely experts and their gates, renormalised to sum to 1;
- ``dispatch_and_combine``: send each token to its k experts, add back their gate-weighted outputs;
- ``dispatch_with_capacity``: the block with a Switch-style capacity per expert (first choices before second
  ones, then token order; the overflow dropped and carried by the residual), checked against ``capacity_mask``;
- ``expert_choice``: expert-choice routing (each expert takes its capacity best tokens), checked against
  ``moe_expert_choice.expert_choice``;
- ``moe_forward``: the whole layer on stacked SwiGLU weights (router, top-k renormalised gates, grouped
  dispatch, combine), checked against the course's ``moe.MoE`` holding the same weights;
- ``load_balancing_loss``: the Switch auxiliary loss α · E · Σᵢ fᵢ · Pᵢ, its gradient followed back to
  the router logits (a loss that never reaches the router fails even when its value is right);
- ``group_limited_gates``: DeepSeek-V3's node-limited router (a token's k experts from its best groups only),
  checked against ``moe_deepseek.deepseek_v3_gates`` with groups;
- ``deepseek_moe``: DeepSeekMoE, shared experts plus routed ones chosen by DeepSeek-V3's router (sigmoid
  affinities, a bias that only steers the choice), checked against ``moe_deepseek.deepseek_moe``.

``_cases`` holds the seeded router logits the router, dispatch and balancing exercises build their inputs from.
"""

from course_utils.checks.mixture_of_experts.dispatch_and_combine import (
    DISPATCH_AND_COMBINE,
    check_dispatch_and_combine,
)
from course_utils.checks.mixture_of_experts.deepseek_moe import DEEPSEEK_MOE, check_deepseek_moe
from course_utils.checks.mixture_of_experts.dispatch_with_capacity import (
    DISPATCH_WITH_CAPACITY,
    check_dispatch_with_capacity,
)
from course_utils.checks.mixture_of_experts.expert_choice import EXPERT_CHOICE, check_expert_choice
from course_utils.checks.mixture_of_experts.group_limited_gates import GROUP_LIMITED_GATES, check_group_limited_gates
from course_utils.checks.mixture_of_experts.load_balancing_loss import LOAD_BALANCING_LOSS, check_load_balancing_loss
from course_utils.checks.mixture_of_experts.moe_forward import MOE_FORWARD, check_moe_forward
from course_utils.checks.mixture_of_experts.top_k_router import TOP_K_ROUTER, check_top_k_router

_IN_NOTEBOOK_ORDER = (
    TOP_K_ROUTER,
    DISPATCH_AND_COMBINE,
    DISPATCH_WITH_CAPACITY,
    EXPERT_CHOICE,
    MOE_FORWARD,
    LOAD_BALANCING_LOSS,
    GROUP_LIMITED_GATES,
    DEEPSEEK_MOE,
)
EXERCISES = {ex.name: ex for ex in _IN_NOTEBOOK_ORDER}

__all__ = [
    "DEEPSEEK_MOE",
    "DISPATCH_AND_COMBINE",
    "DISPATCH_WITH_CAPACITY",
    "EXERCISES",
    "EXPERT_CHOICE",
    "GROUP_LIMITED_GATES",
    "LOAD_BALANCING_LOSS",
    "MOE_FORWARD",
    "TOP_K_ROUTER",
    "check_deepseek_moe",
    "check_dispatch_and_combine",
    "check_dispatch_with_capacity",
    "check_expert_choice",
    "check_group_limited_gates",
    "check_load_balancing_loss",
    "check_moe_forward",
    "check_top_k_router",
]
