"""Counting, notebook 08: parameters, FLOPs, memory and time of a decoder-only model.

Modules:

- ``parameters``: parameter counts from a configuration
- ``compute``: FLOPs and training memory
- ``memory``: activation memory
- ``hardware``: accelerators' spec sheets
- ``training_time``: how long training takes
- ``scaling``: compute-optimal training
- ``decoding``: why decoding is memory-bound
- ``decoder``: a decoder built from the configuration, to measure

Their public names are importable from the package itself (``from course_utils.counting import ...``),
loaded when first used (lazy_loader), so importing the package costs nothing.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "parameters": [
            "CATEGORIES", "GROUPS", "MLPS", "NORMS", "POSITIONS", "ModelConfig", "attention_parameters",
            "mlp_parameters", "norm_parameters", "count_parameters", "active_parameters", "non_embedding_parameters",
            "group_counts", "count_encoder_decoder", "GPT2_SMALL", "GPT2_MEDIUM", "GPT2_LARGE", "GPT2_XL",
            "GPT3_175B", "GPT3_175B_WEIGHTS_ONLY", "MIXTRAL_8X7B", "LLAMA3_8B", "TRANSFORMER_BASE", "TRANSFORMER_BIG",
            "PRESETS",
        ],
        "compute": [
            "PRECISIONS", "matmul_parameters", "forward_flops", "forward_flops_by_operation",
            "forward_flops_per_token", "approximate_forward_flops", "training_flops", "measure_flops",
            "training_memory", "kv_cache_bytes_per_token", "moe_capacity_and_cost",
        ],
        "memory": ["RECOMPUTE", "activation_bytes_per_layer", "training_bytes", "saved_activation_bytes"],
        "hardware": ["Accelerator", "A100_80GB", "H100_SXM"],
        "training_time": ["training_seconds", "model_flops_utilization"],
        "scaling": ["TOKENS_PER_PARAMETER", "chinchilla_tokens", "compute_optimal"],
        "decoding": ["decode_step", "decode_step_seconds"],
        "decoder": [
            "Attention", "MLP", "MixtureOfExperts", "DecoderBlock", "Decoder", "CATEGORY_OF_MODULE",
            "count_by_category",
        ],
    },
)
