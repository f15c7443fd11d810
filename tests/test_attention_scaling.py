"""The n² table, the exponent fit, and the measurement's shape (not its timings, which vary)."""

import pytest
import torch

from course_utils.attention_scaling import fit_exponent, measure_attention, pair_counts


def test_pair_counts_reproduce_the_1_16_1024_table():
    table = pair_counts([1000, 4000, 32000])
    assert [row["pairs"] for row in table] == [1_000_000, 16_000_000, 1_024_000_000]
    assert [row["relative"] for row in table] == [1.0, 16.0, 1024.0]


def test_fit_exponent_recovers_known_powers():
    xs = [100, 200, 400, 800]
    assert fit_exponent(xs, [3 * x**2 for x in xs]) == pytest.approx(2.0)
    assert fit_exponent(xs, [x**1.5 for x in xs]) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="at least two positive"):
        fit_exponent([1], [1])


def test_measurement_reports_pattern_bytes_and_restores_threads():
    threads = torch.get_num_threads()
    rows = measure_attention([32, 64], d_head=8, n_heads=2, repeats=1)
    assert torch.get_num_threads() == threads
    assert [r["pattern_bytes"] for r in rows] == [2 * 32 * 32 * 4, 2 * 64 * 64 * 4]
    assert all(r["seconds"] > 0 for r in rows)


@pytest.mark.gpu
def test_measurement_on_cuda_reports_peak_memory():
    rows = measure_attention([256, 512], device="cuda", repeats=1)
    assert all(r["peak_bytes"] >= r["pattern_bytes"] for r in rows)


def test_scaling_plot_reports_the_fitted_exponent():
    import matplotlib

    matplotlib.use("Agg")
    from course_utils.viz.scaling import plot_scaling

    fig = plot_scaling([100, 200, 400], [1.0, 4.0, 16.0])
    assert "exponent 2.00" in fig.axes[0].get_legend().get_texts()[0].get_text()
