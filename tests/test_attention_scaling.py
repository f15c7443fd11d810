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


@pytest.mark.parametrize("pos,window", [(12, 4), (13, 4), (5, 8), (1, 1), (9, 1), (16, 16)])
@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_sliding_window_attention_equals_the_full_table_with_a_sliding_window_mask(pos, window, impl):
    from course_utils.attention import scaled_dot_product_attention
    from course_utils.masking import sliding_window_mask
    from course_utils.attention_scaling import sliding_window_attention

    gen = torch.Generator().manual_seed(pos * 100 + window)
    q, k, v = torch.randn(3, 2, 3, pos, 8, generator=gen, dtype=torch.float64)  # (batch, head, pos, d)
    expected = scaled_dot_product_attention(q, k, v, sliding_window_mask(pos, window))
    torch.testing.assert_close(sliding_window_attention(q, k, v, window, impl=impl), expected)


def test_sliding_window_work_grows_linearly_in_length_and_the_full_table_quadratically():
    from torch.utils.flop_counter import FlopCounterMode
    from course_utils.attention_scaling import sliding_window_attention

    def flops(fn, pos):
        q, k, v = torch.randn(3, 1, pos, 16)
        with FlopCounterMode(display=False) as counter:
            fn(q, k, v)
        return counter.get_total_flops()

    windowed = [flops(lambda q, k, v: sliding_window_attention(q, k, v, 32), n) for n in (256, 512, 1024)]
    assert windowed[1] == 2 * windowed[0] and windowed[2] == 2 * windowed[1]
    assert windowed[0] == 2 * 2 * 256 * (2 * 32) * 16  # scores and mixing over 2w keys per query
    full = [flops(lambda q, k, v: q @ k.transpose(-2, -1) @ v, n) for n in (256, 512)]
    assert full[1] == 4 * full[0]


def test_sliding_window_attention_rejects_bad_input():
    from course_utils.attention_scaling import sliding_window_attention

    x = torch.zeros(4, 8)
    with pytest.raises(ValueError, match="window"):
        sliding_window_attention(x, x, x, 0)
    with pytest.raises(ValueError, match="impl"):
        sliding_window_attention(x, x, x, 2, impl="flash")
    with pytest.raises(ValueError, match="same leading dims"):
        sliding_window_attention(x, torch.zeros(5, 8), x, 2)


def test_mask_savings_reports_the_four_variants_and_restores_threads():
    from course_utils.attention_scaling import measure_mask_savings

    threads = torch.get_num_threads()
    timings = measure_mask_savings(128, 16, d_head=8, repeats=1)
    assert torch.get_num_threads() == threads
    assert set(timings) == {"full", "causal", "causal_as_table", "window"}
    assert all(t["seconds"] > 0 and t["relative"] > 0 for t in timings.values())
    assert timings["full"]["relative"] == 1.0


@pytest.mark.gpu
def test_sliding_window_attention_on_cuda():
    from course_utils.attention import scaled_dot_product_attention
    from course_utils.masking import sliding_window_mask
    from course_utils.attention_scaling import measure_mask_savings, sliding_window_attention

    q, k, v = torch.randn(3, 2, 50, 16, device="cuda")
    expected = scaled_dot_product_attention(q, k, v, sliding_window_mask(50, 8, device="cuda"))
    for impl in ("reference", "fused"):
        torch.testing.assert_close(sliding_window_attention(q, k, v, 8, impl=impl), expected, atol=1e-4, rtol=1e-4)
    assert set(measure_mask_savings(1024, 128, device="cuda", repeats=2)) == {"full", "causal", "causal_as_table", "window"}


def test_visited_tiles_counts_the_blocks_a_tile_skipping_kernel_must_compute():
    from course_utils.attention_scaling import visited_tiles
    from course_utils.masking import causal_mask, sliding_window_mask

    n_tiles = 4096 // 64
    assert visited_tiles(causal_mask(4096)) == n_tiles * (n_tiles + 1) / 2 / n_tiles**2  # the triangle of tiles
    assert visited_tiles(torch.ones(100, 100, dtype=torch.bool), tile=64) == 1.0
    # a window of 128 = 2 tiles touches 3 tiles per tile-row (fewer in the first rows)
    assert visited_tiles(sliding_window_mask(4096, 128)) == (3 * n_tiles - 3) / n_tiles**2
    brute = causal_mask(10)
    blocks = [[bool(brute[i:i + 4, j:j + 4].any()) for j in range(0, 10, 4)] for i in range(0, 10, 4)]
    assert visited_tiles(brute, tile=4) == sum(map(sum, blocks)) / 9
    with pytest.raises(TypeError, match="torch.bool"):
        visited_tiles(torch.ones(3, 3))
