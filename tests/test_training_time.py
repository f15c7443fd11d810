"""Time to train at a given MFU, and the accelerators' ridge points: worked examples from the papers."""

from __future__ import annotations

import pytest

from course_utils.counting.hardware import A100_80GB, H100_SXM, Accelerator
from course_utils.counting.training_time import model_flops_utilization, training_seconds


def test_megatron_lm_gpt3_estimate_is_34_days():
    # Narayanan et al. 2021, section 5.1: 8TP / (nX), T = 300B, P = 175B, n = 1024, X = 140 TFLOP/s
    days = training_seconds(8 * 175e9 * 300e9, 1024, 140e12, 1.0) / 86400
    assert round(days) == 34
    assert days == pytest.approx(4.2e23 / (1024 * 140e12) / 86400)


def test_time_scales_inversely_with_accelerators_and_mfu():
    assert training_seconds(1e18, 10, 1e15, 0.5) == pytest.approx(200.0)
    assert training_seconds(1e18, 20, 1e15, 0.5) == pytest.approx(100.0)
    assert training_seconds(1e18, 10, 1e15, 0.25) == pytest.approx(400.0)


def test_mfu_inverts_training_time():
    n, tokens, chips, peak = 175e9, 300e9, 1024, A100_80GB.peak_flops
    seconds = training_seconds(6 * n * tokens, chips, peak, 0.4)
    assert model_flops_utilization(n, tokens / seconds, chips, peak) == pytest.approx(0.4)
    assert model_flops_utilization(1e9, 1e4, 1, 1.5e14) == pytest.approx(0.4)


def test_ridge_points_from_the_datasheets():
    assert A100_80GB.flops_per_byte == pytest.approx(312e12 / 2.039e12)
    assert round(A100_80GB.flops_per_byte) == 153
    assert round(H100_SXM.flops_per_byte) == 295


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="mfu"):
        training_seconds(1e18, 1, 1e15, 0.0)
    with pytest.raises(ValueError, match="mfu"):
        training_seconds(1e18, 1, 1e15, 1.5)
    with pytest.raises(ValueError, match="n_accelerators"):
        training_seconds(1e18, 0, 1e15, 0.5)
    with pytest.raises(TypeError, match="flops"):
        training_seconds("1e18", 1, 1e15, 0.5)
    with pytest.raises(ValueError, match="tokens_per_second"):
        model_flops_utilization(1e9, -1, 1, 1e15)
    with pytest.raises(ValueError, match="memory_bandwidth"):
        Accelerator("x", 1e15, 0, 1e9)
    with pytest.raises(TypeError, match="name"):
        Accelerator(1, 1e15, 1e12, 1e9)
