"""The n² table, the exponent fit, and the measurement's shape (not its timings, which vary)."""

from types import SimpleNamespace

import pytest
import torch

from course_utils.attention.scaling import fit_exponent, measure_attention, pair_counts


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


def _fake_clock(monkeypatch) -> dict:
    """Replace attention_scaling's clock by one that only moves when a test says so."""
    from course_utils.attention import scaling as attention_scaling

    clock = {"now": 0.0}
    monkeypatch.setattr(attention_scaling, "time", SimpleNamespace(perf_counter=lambda: clock["now"]))
    return clock


def test_measurement_times_causal_attention_reports_the_median_run_and_restores_threads(monkeypatch):
    from course_utils.attention import scaling as attention_scaling
    from course_utils.attention.dot_product import attention_pattern

    clock = _fake_clock(monkeypatch)
    run_ms = [100, 1, 7, 2, 50]  # per size and call, scaled by n / 32: a warm-up, three timed runs, the final run
    calls = []

    def timed_pattern(q, k, mask):  # the real pattern; a run on n positions "takes" run_ms[i] * n / 32 ms
        n_seen = sum(c[0].shape[-2] == q.shape[-2] for c in calls)
        clock["now"] += run_ms[min(n_seen, len(run_ms) - 1)] * q.shape[-2] / 32 / 1000
        pattern = attention_pattern(q, k, mask)
        calls.append((q, k, pattern))
        return pattern

    monkeypatch.setattr(attention_scaling, "attention_pattern", timed_pattern)
    threads = torch.get_num_threads()
    rows = measure_attention([32, 64], d_head=8, n_heads=2, repeats=3)
    assert torch.get_num_threads() == threads
    assert [r["n_ctx"] for r in rows] == [32, 64]  # one row per requested length, in order
    assert [r["seconds"] for r in rows] == pytest.approx([0.002, 0.004])  # median of 1, 7, 2 (x n/32) ms
    assert [r["pattern_bytes"] for r in rows] == [2 * 32 * 32 * 4, 2 * 64 * 64 * 4]
    assert {q.shape[-2] for q, _, _ in calls} == {32, 64}
    for q, k, pattern in calls:  # what is timed is causal attention of (head, pos, d_head) inputs
        n = q.shape[-2]
        assert q.shape == k.shape == (2, n, 8)
        scores = (q @ k.transpose(-2, -1)) / 8**0.5
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        torch.testing.assert_close(pattern, torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1))


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
    from course_utils.attention.dot_product import scaled_dot_product_attention
    from course_utils.masking import sliding_window_mask
    from course_utils.attention.scaling import sliding_window_attention

    gen = torch.Generator().manual_seed(pos * 100 + window)
    q, k, v = torch.randn(3, 2, 3, pos, 8, generator=gen, dtype=torch.float64)  # (batch, head, pos, d)
    expected = scaled_dot_product_attention(q, k, v, sliding_window_mask(pos, window))
    torch.testing.assert_close(sliding_window_attention(q, k, v, window, impl=impl), expected)


def test_sliding_window_work_grows_linearly_in_length_and_the_full_table_quadratically():
    from torch.utils.flop_counter import FlopCounterMode
    from course_utils.attention.scaling import sliding_window_attention

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
    from course_utils.attention.scaling import sliding_window_attention

    x = torch.zeros(4, 8)
    with pytest.raises(ValueError, match="window"):
        sliding_window_attention(x, x, x, 0)
    with pytest.raises(ValueError, match="impl"):
        sliding_window_attention(x, x, x, 2, impl="flash")
    with pytest.raises(ValueError, match="same leading dims"):
        sliding_window_attention(x, torch.zeros(5, 8), x, 2)


def test_mask_savings_reports_the_four_variants_and_restores_threads():
    from course_utils.attention.scaling import measure_mask_savings

    threads = torch.get_num_threads()
    timings = measure_mask_savings(128, 16, d_head=8, repeats=1)
    assert torch.get_num_threads() == threads
    assert set(timings) == {"full", "causal", "causal_as_table", "window"}
    assert timings["full"]["relative"] == 1.0


def test_mask_savings_are_each_variants_median_time_and_its_median_ratio_to_full(monkeypatch):
    from course_utils.attention import scaling as attention_scaling

    clock = _fake_clock(monkeypatch)
    cost = {"full": 4.0, "causal": 2.0, "causal_as_table": 5.0, "window": 1.0}  # seconds on an idle machine
    slowdown = [10.0, 1.0, 3.0, 2.0]  # the warm-up, then three rounds on a machine busy by this factor
    fused = torch.nn.functional.scaled_dot_product_attention
    full_calls = []

    def advance(variant):
        clock["now"] += cost[variant] * slowdown[len(full_calls) - 1]

    def timed_fused(q, k, v, attn_mask=None, is_causal=False):
        variant = "causal" if is_causal else "causal_as_table" if attn_mask is not None else "full"
        if variant == "full":
            full_calls.append(1)
        advance(variant)
        return fused(q, k, v, attn_mask=attn_mask, is_causal=is_causal)

    def timed_window(q, k, v, window, impl="reference"):
        advance("window")
        return torch.zeros_like(q)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", timed_fused)
    monkeypatch.setattr(attention_scaling, "sliding_window_attention", timed_window)
    timings = attention_scaling.measure_mask_savings(64, 8, d_head=8, repeats=3)
    assert len(full_calls) == 4  # a warm-up and three rounds
    for name, seconds in cost.items():
        assert timings[name]["seconds"] == pytest.approx(seconds * 2.0)  # the median slowdown of 1, 3, 2
        assert timings[name]["relative"] == pytest.approx(seconds / cost["full"])  # the same in every round


@pytest.mark.gpu
def test_sliding_window_attention_on_cuda():
    from course_utils.attention.dot_product import scaled_dot_product_attention
    from course_utils.masking import sliding_window_mask
    from course_utils.attention.scaling import measure_mask_savings, sliding_window_attention

    q, k, v = torch.randn(3, 2, 50, 16, device="cuda")
    expected = scaled_dot_product_attention(q, k, v, sliding_window_mask(50, 8, device="cuda"))
    for impl in ("reference", "fused"):
        torch.testing.assert_close(sliding_window_attention(q, k, v, 8, impl=impl), expected, atol=1e-4, rtol=1e-4)
    assert set(measure_mask_savings(1024, 128, device="cuda", repeats=2)) == {"full", "causal", "causal_as_table", "window"}


def test_visited_tiles_counts_the_blocks_a_tile_skipping_kernel_must_compute():
    from course_utils.attention.scaling import visited_tiles
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
