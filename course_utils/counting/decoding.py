"""Why generating text is limited by memory bandwidth, not arithmetic: one decode step's FLOPs and bytes.

A decode step runs one new token per sequence through the model. Every weight matrix is read from
memory once for the whole batch and does 2 FLOPs per weight per sequence (a multiply-add), so the
weights' arithmetic intensity is ``2 * batch / bytes_per_value`` FLOPs per byte: 1 at batch 1 in
bf16, 2 with 1-byte weights. An accelerator can do hundreds of FLOPs in the time it reads a byte
(``course_utils.counting.hardware``), so the step waits on memory until the batch reaches that ratio. The
KV cache is read on top, once per sequence (sequences share weights, not caches): its intensity is
``2 * n_heads / (n_kv_heads * bytes_per_value)`` (1 for ordinary attention in bf16) whatever the
batch, which is why grouped-query attention, sharing each key/value head among ``n_heads /
n_kv_heads`` query heads, matters twice: fewer bytes per cached token and more FLOPs per byte.

``decode_step(LLAMA3_8B, context=0)["intensity"]`` -> 1.0 (bf16, batch 1).

Conventions: FLOPs and weights as ``course_utils.counting.compute`` (matrix products only, 2 per multiply-add;
the weights read are those one token multiplies by: ``matmul_parameters``; for a mixture of experts
at batch > 1 that is a lower bound, since different tokens read different experts). Time is the
roofline bound ``max(FLOPs / peak, bytes / bandwidth)``: a real step is slower.

Leaves out: activations' traffic, the prefill of the prompt (compute-bound: many tokens per weight
read), speculative decoding and quantisation schemes.
"""

from __future__ import annotations

from course_utils.counting.compute import kv_cache_bytes_per_token, matmul_parameters
from course_utils.counting.parameters import ModelConfig
from course_utils.counting.hardware import Accelerator
from course_utils.validate import non_negative_int, positive_int


def decode_step(cfg: ModelConfig, context: int, batch: int = 1, bytes_per_value: int = 2) -> dict[str, float]:
    """FLOPs and bytes read to decode one token for each of ``batch`` sequences.

    ``context``: the keys the new token attends to (the cache, its own key included; 0 leaves
    attention out).
    Keys: ``weight_flops``, ``attention_flops``, ``weight_bytes``, ``kv_bytes``, ``flops``, ``bytes``,
    ``intensity`` (FLOPs per byte, all together), ``weight_intensity``, ``attention_intensity``.
    """
    if not isinstance(cfg, ModelConfig):
        raise TypeError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
    non_negative_int("context", context)
    positive_int("batch", batch)
    positive_int("bytes_per_value", bytes_per_value)
    weights = matmul_parameters(cfg)
    step = {
        "weight_flops": 2 * batch * weights,
        "attention_flops": 4 * batch * cfg.n_layers * context * cfg.n_heads * cfg.d_head,  # q.K and pattern.V
        "weight_bytes": weights * bytes_per_value,
        "kv_bytes": batch * context * kv_cache_bytes_per_token(cfg, bytes_per_value),
    }
    step["flops"] = step["weight_flops"] + step["attention_flops"]
    step["bytes"] = step["weight_bytes"] + step["kv_bytes"]
    step["intensity"] = step["flops"] / step["bytes"]
    step["weight_intensity"] = step["weight_flops"] / step["weight_bytes"]
    step["attention_intensity"] = 2 * cfg.n_heads / (cfg.kv_heads * bytes_per_value)
    return step


def decode_step_seconds(step: dict, accelerator: Accelerator) -> dict[str, float]:
    """Roofline bound of one step: ``{"compute_s", "memory_s", "seconds", "memory_bound"}``."""
    if not isinstance(step, dict) or not {"flops", "bytes"} <= set(step):
        raise ValueError("step must be a dict from decode_step (with 'flops' and 'bytes')")
    if not isinstance(accelerator, Accelerator):
        raise TypeError(f"accelerator must be an Accelerator, got {type(accelerator).__name__}")
    compute_s = step["flops"] / accelerator.peak_flops
    memory_s = step["bytes"] / accelerator.memory_bandwidth
    return {"compute_s": compute_s, "memory_s": memory_s, "seconds": max(compute_s, memory_s),
            "memory_bound": memory_s > compute_s}
