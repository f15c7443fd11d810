"""Mixture of experts, notebook 07: routing tokens to experts and keeping the experts busy.

Modules:

- ``routing``: top-k gates, capacity
- ``dispatch``: sending tokens to experts and back
- ``layer``: the MoE layer and its SwiGLU experts
- ``balancing``: auxiliary loss, z-loss, selection bias
- ``deepseek``: DeepSeek-V3's gates and sequence balance loss
- ``expert_choice``: experts choosing tokens
- ``counting``: DeepSeek-V3's parameter count
- ``experiment``: the balancing experiment
- ``outcomes``: what the experiment's runs show, with margins

Their public names are importable from the package itself (``from course_utils.moe import ...``),
loaded when first used (lazy_loader), so importing the package costs nothing.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "routing": [
            "check_experts_and_k", "check_router_logits", "check_capacity_factor", "top_k_gates",
            "top_k_gates_mixtral", "expert_capacity", "capacity_mask", "Routing",
        ],
        "dispatch": ["Expert", "dispatch_naive", "dispatch_grouped", "dispatch_dense"],
        "layer": ["DISPATCH", "swiglu", "SwiGLU", "MoE", "load_mixtral_block"],
        "balancing": [
            "load_balancing_loss", "router_z_loss", "update_selection_bias", "load_shares", "usage_entropy",
            "max_entropy_bits",
        ],
        "deepseek": ["deepseek_v3_gates", "sequence_balance_loss", "deepseek_moe"],
        "expert_choice": ["expert_choice_routing"],  # not expert_choice: the module has that name
        "counting": ["mla_parameters", "DeepSeekConfig", "count_deepseek", "DEEPSEEK_V3"],
        "experiment": [
            "BALANCING", "ExperimentConfig", "Task", "TrainingRun", "make_task", "sample_batch", "specialisation",
            "train_moe", "run_experiment", "train_grid", "probe_batch", "capacity_report", "expert_owners",
        ],
        "outcomes": [
            "STARVED", "BALANCED", "OWNER", "final_shares", "starved_experts", "claim_margins", "claims",
            "starved_histories", "loss_spread",
        ],
    },
)
