"""How long training takes: model FLOPs over what the accelerators deliver.

Covers ``training_seconds`` (FLOPs / (accelerators x peak FLOP/s x MFU)) and
``model_flops_utilization`` (its inverse: the share of the peak a run's throughput represents).
MFU, model FLOPs utilisation (Chowdhery et al. 2022, PaLM), counts the model's own FLOPs, 6N per
trained token (``course_utils.counting.compute.training_flops``), whatever the hardware really executes:
recomputing activations (``course_utils.counting.memory``) adds work the hardware does (an extra forward
pass, 8N instead of 6N, under full recomputation) but not model FLOPs, so it lowers MFU; the ratio
that includes it is hardware FLOPs utilisation (HFU).

Worked example (Narayanan et al. 2021, Megatron-LM, section 5.1): GPT-3 175B on 300B tokens with
full recomputation, 8NT FLOPs, on 1,024 A100s at 140 TFLOP/s each ->
``training_seconds(8 * 175e9 * 300e9, 1024, 140e12, 1.0) / 86400`` -> about 34 days.

Leaves out: failures and restarts, evaluation, data loading, and the communication that makes a
real MFU lower than one.
"""

from __future__ import annotations

from course_utils.validate import number_in, positive_int, positive_number


def training_seconds(flops: float, n_accelerators: int, peak_flops: float, mfu: float) -> float:
    """``flops / (n_accelerators * peak_flops * mfu)``: ``training_seconds(1e18, 10, 1e15, 0.5)`` -> 200.0."""
    positive_number("flops", flops)
    positive_int("n_accelerators", n_accelerators)
    positive_number("peak_flops", peak_flops)
    number_in("mfu", mfu, 0, 1, low_open=True)
    return flops / (n_accelerators * peak_flops * mfu)


def model_flops_utilization(
    n_params: float, tokens_per_second: float, n_accelerators: int, peak_flops: float
) -> float:
    """``6 * n_params * tokens_per_second / (n_accelerators * peak_flops)``, the share of the peak used.

    ``model_flops_utilization(1e9, 1e4, 1, 1.5e14)`` -> 0.4.
    """
    positive_number("n_params", n_params)
    positive_number("tokens_per_second", tokens_per_second)
    positive_int("n_accelerators", n_accelerators)
    positive_number("peak_flops", peak_flops)
    return 6 * n_params * tokens_per_second / (n_accelerators * peak_flops)
