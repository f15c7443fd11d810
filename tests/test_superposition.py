"""Superposition geometry, the toy model of superposition and the sparse autoencoder.

Oracles: NumPy float64 on the full Gram matrix for the angle statistics; a regular simplex and
three directions 120° apart for the Welch bound; explicit per-instance loops for the batched toy
model; analytic polygons for feature dimensionality; the AND gate's pre-activations by hand. Trained outcomes
(sweeps, pentagon, SAE recovery) are asserted over seeds in tests/test_06_seeds.py.
"""

import math

import numpy as np
import pytest
import torch

from course_utils.superposition.sparse_autoencoder import hidden_activation_sampler, recovered_features
from course_utils.superposition.geometry import (AND_GATE_INPUTS, AND_GATE_WORDS, AndGate, and_gate, and_gate_preactivations,
                                        angle_deviation_summary, fit_power_law, pairwise_angle_stats,
                                        random_unit_vectors, welch_bound)
from course_utils.superposition.toy_models import (ToyModel, feature_dimensionality, feature_norms, importance_weighted_loss, interference,
                                     toy_model_forward)


# -- angle statistics -----------------------------------------------------------------------------
def _numpy_oracle(v: np.ndarray):
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    i, j = np.triu_indices(len(u), k=1)
    angles = np.degrees(np.arccos(np.clip((u @ u.T)[i, j], -1, 1)))
    dev = angles - 90.0
    return angles, math.sqrt(np.mean(dev**2)), np.mean(np.abs(dev)), np.max(np.abs(dev))


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 1000])
def test_angle_stats_match_numpy_float64_for_any_chunk_size(chunk_size):
    v = torch.randn(150, 30, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 3.0  # not unit length
    angles, rms, mean_abs, worst = _numpy_oracle(v.numpy())
    stats = pairwise_angle_stats(v, chunk_size=chunk_size, bins=90)
    assert stats.n_pairs == 150 * 149 // 2 == len(angles)
    assert stats.rms_deviation_deg == pytest.approx(rms, rel=1e-9)
    assert stats.mean_abs_deviation_deg == pytest.approx(mean_abs, rel=1e-9)
    assert stats.max_deviation_deg == pytest.approx(worst, rel=1e-9)
    counts, _ = np.histogram(angles, bins=90, range=(0, 180))
    assert np.abs(stats.hist_counts.numpy() - counts).sum() <= 2  # a value exactly on an edge may fall either side
    assert stats.hist_counts.sum().item() == len(angles)


@pytest.mark.parametrize("chunk_size", [1, 5, 64, 300, 512, 1024])
def test_float32_angle_stats_match_numpy_float64(chunk_size):
    """The float32 path (in-place arcsin, float32 partial sums)."""
    v = torch.randn(300, 40, generator=torch.Generator().manual_seed(1)) * 2.0
    angles, rms, mean_abs, worst = _numpy_oracle(v.double().numpy())
    stats = pairwise_angle_stats(v, chunk_size=chunk_size, bins=180)
    assert stats.rms_deviation_deg == pytest.approx(rms, rel=1e-5)
    assert stats.mean_abs_deviation_deg == pytest.approx(mean_abs, rel=1e-5)
    assert stats.max_deviation_deg == pytest.approx(worst, rel=1e-5)
    assert stats.max_abs_cos == pytest.approx(math.sin(math.radians(worst)), rel=1e-5)
    counts, _ = np.histogram(angles, bins=180, range=(0, 180))
    assert np.abs(stats.hist_counts.numpy() - counts).sum() <= 4  # float32 rounding can move a pair across an edge
    assert stats.hist_counts.sum().item() == len(angles)


@pytest.mark.parametrize("start,stop,dim", [(0, 1, 10**9), (3, 10, 1 << 24), (0, 512, 12_288), (100, 613, 12_288), (0, 37, 1 << 28),
                                             (0, 512, 100)])
def test_triangle_tiles_cover_every_pair_once(start, stop, dim):
    from course_utils.superposition.geometry import _SPLIT_MACS, _triangle_tiles
    seen = np.zeros((stop, stop), dtype=int)
    tiles = list(_triangle_tiles(start, stop, dim))
    for r0, r1, c0, c1 in tiles:
        assert start <= r0 < r1 <= stop and start <= c0 < c1 <= stop
        tile = seen[r0:r1, c0:c1]
        tile += np.triu(np.ones_like(tile), 1) if r0 == c0 else 1
        assert r0 == c0 or r1 <= c0  # off-diagonal tiles lie wholly above the diagonal
        assert r0 != c0 or r1 - r0 == 1 or (r1 - r0) ** 2 * dim <= _SPLIT_MACS or len(tiles) == 1
    expected = np.triu(np.ones((stop, stop), dtype=int), 1)
    expected[:start] = 0
    assert (seen == expected).all()
    if (stop - start) ** 2 * dim <= _SPLIT_MACS:
        assert tiles == [(start, stop, start, stop)]  # small: one tile


def test_identical_directions_are_zero_degrees_apart_without_nan():
    v = torch.randn(40, 6, generator=torch.Generator().manual_seed(0))
    stats = pairwise_angle_stats(torch.cat([v, 2.5 * v[:3]]), chunk_size=16)  # three pairs at exactly 0°
    assert stats.max_abs_cos == 1.0 and stats.max_deviation_deg == 90.0
    assert math.isfinite(stats.rms_deviation_deg) and stats.hist_counts.sum().item() == stats.n_pairs
    assert stats.hist_counts[0].item() >= 3


def test_notebook_06_numbers_at_d_100():
    """The values notebook 06 prints for 4,000 random unit vectors in 100 dimensions (seed 0)."""
    s = pairwise_angle_stats(random_unit_vectors(4_000, 100, seed=0))
    printed = f"{s.rms_deviation_deg:.2f} {s.mean_abs_deviation_deg:.2f} {s.max_deviation_deg:.2f} {s.max_abs_cos:.4f}"
    assert printed == "5.76 4.60 29.23 0.4883"


def test_small_gram_summary_agrees_with_the_chunked_path():
    v = random_unit_vectors(200, 50, seed=3)
    summary = angle_deviation_summary(v)
    stats = pairwise_angle_stats(v, chunk_size=33)
    assert summary.tolist() == pytest.approx([stats.rms_deviation_deg, stats.max_deviation_deg], rel=1e-4)
    assert angle_deviation_summary(torch.tensor([[1.0, 0.0], [1.0, 1.0]])).tolist() == pytest.approx([45.0, 45.0])


@pytest.mark.parametrize("d", [100, 1000])
def test_typical_deviation_follows_one_over_sqrt_d(d):
    stats = pairwise_angle_stats(random_unit_vectors(600, d, seed=1))
    assert math.radians(stats.rms_deviation_deg) == pytest.approx(1 / math.sqrt(d), rel=0.05)


def test_power_law_fit_recovers_exponent():
    dims = torch.tensor([10.0, 100.0, 1000.0])
    c, k = fit_power_law(dims, 2.0 * dims**-0.5)
    assert (c, k) == (pytest.approx(2.0), pytest.approx(-0.5))


def test_random_unit_vectors_are_unit_and_seeded():
    a, b = random_unit_vectors(5, 7, seed=2), random_unit_vectors(5, 7, seed=2)
    assert torch.equal(a, b)
    torch.testing.assert_close(a.norm(dim=1), torch.ones(5))


# -- Welch bound ----------------------------------------------------------------------------------
def _simplex(d: int) -> torch.Tensor:
    """d + 1 unit vectors in d dimensions with all pairwise cosines −1/d (the centred standard basis)."""
    e = torch.eye(d + 1, dtype=torch.float64) - 1.0 / (d + 1)
    basis = torch.linalg.svd(e).Vh[:d]  # (d, d+1): an orthonormal basis of the sum-zero subspace
    v = e @ basis.T
    return v / v.norm(dim=1, keepdim=True)


@pytest.mark.parametrize("d", [2, 3, 10])
def test_welch_bound_is_attained_by_the_regular_simplex(d):
    v = _simplex(d)
    gram = v @ v.T
    worst = (gram - torch.eye(d + 1, dtype=torch.float64)).abs().max().item()
    assert worst == pytest.approx(1 / d)
    assert welch_bound(d + 1, d) == pytest.approx(worst)


def test_welch_bound_is_never_beaten_and_is_zero_when_vectors_fit_orthogonally():
    assert welch_bound(3, 2) == pytest.approx(0.5)
    assert welch_bound(5, 5) == 0.0 and welch_bound(2, 10) == 0.0
    for n, d in [(50, 10), (400, 100)]:
        assert pairwise_angle_stats(random_unit_vectors(n, d, seed=0)).max_abs_cos >= welch_bound(n, d)


@pytest.mark.parametrize("call,exc,word", [
    (lambda: welch_bound(1, 3), ValueError, "n"),
    (lambda: welch_bound(5, 0), ValueError, "d"),
    (lambda: welch_bound(5.0, 2), ValueError, "n must be a positive int"),
    (lambda: welch_bound(0, 2), ValueError, "^n must"),
    (lambda: random_unit_vectors(0, 3), ValueError, "^n must"),
    (lambda: pairwise_angle_stats(torch.eye(3), bins=0), ValueError, "^bins"),
    (lambda: random_unit_vectors(3, 0), ValueError, "d"),
    (lambda: pairwise_angle_stats(torch.randn(1, 4)), ValueError, "at least two"),
    (lambda: pairwise_angle_stats(torch.randn(4)), ValueError, r"\(n, d\)"),
    (lambda: pairwise_angle_stats(torch.tensor([[1.0, float("nan")], [0.0, 1.0]])), ValueError, "finite"),
    (lambda: pairwise_angle_stats(torch.tensor([[0.0, 0.0], [0.0, 1.0]])), ValueError, "non-zero"),
    (lambda: pairwise_angle_stats([[1.0, 0.0], [0.0, 1.0]]), TypeError, "vectors"),
    (lambda: pairwise_angle_stats(torch.eye(3), chunk_size=0), ValueError, "chunk_size"),
    (lambda: fit_power_law([1, 2], [1, -1]), ValueError, "positive"),
])
def test_bad_inputs_name_the_argument(call, exc, word):
    with pytest.raises(exc, match=word):
        call()


@pytest.mark.gpu
def test_angle_stats_on_cuda_equal_the_cpu_ones():
    v = random_unit_vectors(4000, 1000, seed=0)
    cpu = pairwise_angle_stats(v)
    gpu = pairwise_angle_stats(v.to("cuda"))
    assert gpu.rms_deviation_deg == pytest.approx(cpu.rms_deviation_deg, rel=1e-4)
    assert gpu.max_deviation_deg == pytest.approx(cpu.max_deviation_deg, rel=1e-3)
    assert (gpu.hist_counts - cpu.hist_counts).abs().sum().item() <= 1e-4 * cpu.n_pairs


# -- the toy model --------------------------------------------------------------------------------
def test_batched_forward_and_loss_equal_a_loop_over_instances():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(8, 3, 6, generator=gen, dtype=torch.float64)
    W = torch.randn(3, 2, 6, generator=gen, dtype=torch.float64)
    b = torch.randn(3, 6, generator=gen, dtype=torch.float64)
    importance = torch.rand(3, 6, generator=gen, dtype=torch.float64)
    out = toy_model_forward(x, W, b)
    loss = importance_weighted_loss(x, out, importance)
    for i in range(3):
        expected = torch.nn.functional.relu(torch.nn.functional.linear(x[:, i] @ W[i].T, W[i].T, b[i]))
        torch.testing.assert_close(out[:, i], expected)
        manual = sum(sum(importance[i, f] * (x[s, i, f] - expected[s, f]) ** 2 for f in range(6)) for s in range(8)) / 8
        assert loss[i].item() == pytest.approx(manual.item())


def test_generated_features_have_the_requested_sparsity_and_uniform_values():
    model = ToyModel(2, 50, 5, sparsity=[0.0, 0.9], seed=0)
    x = model.generate_batch(4000, torch.Generator().manual_seed(0))
    zero_fraction = (x == 0).double().mean(dim=(0, 2))
    assert zero_fraction.tolist() == pytest.approx([0.0, 0.9], abs=0.01)
    present = x[:, 1][x[:, 1] > 0]
    assert present.max() <= 1 and present.mean().item() == pytest.approx(0.5, abs=0.02)


def test_feature_dimensionality_of_known_geometries():
    angles = torch.arange(5) * 2 * math.pi / 5
    pentagon = torch.stack([angles.cos(), angles.sin()]).double()  # (hidden=2, feat=5)
    torch.testing.assert_close(feature_dimensionality(pentagon), torch.full((5,), 0.4, dtype=torch.float64))
    antipodal = torch.tensor([[1.0, -1.0, 0.0], [0.0, 0.0, 2.0]], dtype=torch.float64)
    torch.testing.assert_close(feature_dimensionality(antipodal), torch.tensor([0.5, 0.5, 1.0], dtype=torch.float64))
    dead = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    assert feature_dimensionality(dead).tolist() == [1.0, 0.0]
    W = torch.randn(3, 4, 9, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    norms = W.norm(dim=-2)
    quartic = norms**4 / (W.transpose(-1, -2) @ W).square().sum(dim=-1)  # ‖W_i‖⁴ / Σ_j (W_i·W_j)²
    torch.testing.assert_close(feature_dimensionality(W), quartic)
    torch.testing.assert_close(interference(W).diagonal(dim1=-2, dim2=-1), feature_norms(W) ** 2)


@pytest.mark.parametrize("kwargs,exc,word", [
    ({"sparsity": 1.0}, ValueError, "sparsity"),
    ({"sparsity": -0.1}, ValueError, "sparsity"),
    ({"sparsity": [0.1, 0.2, 0.3]}, ValueError, "sparsity"),
    ({"importance": float("inf")}, ValueError, "importance"),
    ({"importance": 0.0}, ValueError, "importance"),
    ({"n_hidden": 0}, ValueError, "n_hidden"),
])
def test_bad_toy_model_arguments_name_the_argument(kwargs, exc, word):
    args = {"n_instances": 2, "n_features": 5, "n_hidden": 2, **kwargs}
    with pytest.raises(exc, match=word):
        ToyModel(**args)


def test_bad_toy_inputs_name_the_argument():
    with pytest.raises(ValueError, match="x must have shape"):
        ToyModel(2, 5, 2)(torch.rand(4, 2, 6))
    with pytest.raises(ValueError, match=r"^W must have at least 2 dims of shape \(\.\.\., hidden, feat\)"):
        feature_dimensionality(torch.ones(3))


def _toy_args(inst=3, hidden=2, feat=5, batch=4):
    gen = torch.Generator().manual_seed(0)
    return {"x": torch.rand(batch, inst, feat, generator=gen), "W": torch.randn(inst, hidden, feat, generator=gen),
            "b_final": torch.randn(inst, feat, generator=gen)}


@pytest.mark.parametrize("name", ["x", "W", "b_final"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_toy_model_forward_rejects_non_finite_tensors_by_name(name, bad):
    args = _toy_args()
    args[name].view(-1)[2] = bad
    with pytest.raises(ValueError, match=rf"^{name} contains NaN or inf"):
        toy_model_forward(**args)


@pytest.mark.parametrize("name,bad_shape", [
    ("x", (4, 3, 6)), ("x", (4, 2, 5)), ("x", (3, 5)), ("b_final", (3, 6)), ("b_final", (5,)), ("W", (2, 5)),
])
def test_toy_model_forward_mismatched_shapes_name_the_argument(name, bad_shape):
    args = _toy_args()
    args[name] = torch.rand(bad_shape)
    with pytest.raises(ValueError, match=rf"^{name} must have (shape|at least)"):
        toy_model_forward(**args)


@pytest.mark.parametrize("name,bad_shape", [("x_hat", (4, 3, 6)), ("x_hat", (3, 5)), ("importance", (3, 6)), ("importance", (6,)),
                                            ("x", (3, 5))])
def test_importance_weighted_loss_mismatched_shapes_name_the_argument(name, bad_shape):
    args = {"x": torch.rand(4, 3, 5), "x_hat": torch.rand(4, 3, 5), "importance": torch.rand(3, 5), name: torch.rand(bad_shape)}
    with pytest.raises(ValueError, match=rf"^{name} must have"):
        importance_weighted_loss(**args)


@pytest.mark.parametrize("name", ["x", "x_hat", "importance"])
def test_importance_weighted_loss_rejects_non_finite_tensors_by_name(name):
    args = {"x": torch.rand(4, 3, 5), "x_hat": torch.rand(4, 3, 5), "importance": torch.rand(3, 5)}
    args[name].view(-1)[0] = float("nan")
    with pytest.raises(ValueError, match=rf"^{name} contains NaN or inf"):
        importance_weighted_loss(**args)


def test_feature_dimensionality_rejects_non_finite_W():
    W = torch.randn(2, 5)
    W[1, 3] = float("nan")
    with pytest.raises(ValueError, match="^W contains NaN or inf"):
        feature_dimensionality(W)
    with pytest.raises(TypeError, match="^W must be a torch.Tensor"):
        feature_dimensionality([[1.0, 0.0]])


def test_toy_checks_are_skipped_on_meta():
    meta = {name: torch.empty(t.shape, device="meta") for name, t in _toy_args().items()}
    assert toy_model_forward(**meta).device.type == "meta"
    assert feature_dimensionality(meta["W"]).device.type == "meta"


@pytest.mark.parametrize("kwargs,word", [({"n_instances": 2.0}, "^n_instances"), ({"n_features": True}, "^n_features")])
def test_toy_model_sizes_must_be_positive_ints(kwargs, word):
    with pytest.raises(ValueError, match=word):
        ToyModel(**{"n_instances": 2, "n_features": 5, "n_hidden": 2, **kwargs})


# -- sparse autoencoder ---------------------------------------------------------------------------
def test_recovered_features_worked_example_and_bad_input():
    best, found = recovered_features(torch.eye(2), torch.tensor([[1.0, 0.1]]))
    assert best.tolist() == pytest.approx([1 / math.sqrt(1.01), 0.1 / math.sqrt(1.01)])
    assert found.tolist() == [True, False]
    with pytest.raises(ValueError, match="same width"):
        recovered_features(torch.eye(2), torch.eye(3))
    with pytest.raises(ValueError, match="instance"):
        hidden_activation_sampler(ToyModel(2, 5, 2), 2)


# -- the AND gate ---------------------------------------------------------------------------------
def test_and_gate_is_built_from_the_word_directions_and_its_preactivations_match_by_hand():
    gate = and_gate(1.5, seed=3, d_model=64)
    d = gate.directions
    assert list(d) == list(AND_GATE_WORDS)
    torch.testing.assert_close(torch.stack(list(d.values())), random_unit_vectors(5, 64, seed=3).double())
    torch.testing.assert_close(gate.W_in[:, 0], d["Michael"] + d["Jordan"])
    assert gate.b_in.tolist() == [-1.5]
    torch.testing.assert_close(gate.W_out[0], 2 * d["basketball"])  # 1 / (2 - 1.5): a full match writes ~1 unit
    by_hand = [(d[a] + d[b]) @ (d["Michael"] + d["Jordan"]) - 1.5 for a, b in AND_GATE_INPUTS]
    torch.testing.assert_close(and_gate_preactivations(gate), torch.stack(by_hand))
    # with exactly perpendicular directions the pre-activations are 2 - 1.5 and 1 - 1.5
    exact = AndGate({w: torch.eye(5, dtype=torch.float64)[i] for i, w in enumerate(AND_GATE_WORDS)},
                    (torch.eye(5, dtype=torch.float64)[0] + torch.eye(5, dtype=torch.float64)[1])[:, None],
                    torch.tensor([-1.5], dtype=torch.float64), torch.zeros(1, 5, dtype=torch.float64))
    assert and_gate_preactivations(exact).tolist() == [0.5, -0.5, -0.5]


@pytest.mark.parametrize("threshold", [0, 2, 2.5, -1, True, "1.5"])
def test_and_gate_threshold_must_lie_between_no_name_and_two(threshold):
    with pytest.raises(ValueError, match="threshold"):
        and_gate(threshold)
