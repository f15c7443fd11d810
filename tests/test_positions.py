"""Positions: the sinusoidal table against a plain-Python formula and the worked d_model = 4 numbers,
the fixed-rotation property, one sine being ambiguous where sin/cos pairs at many frequencies are not,
learned positions, RoPE against complex multiplication and Hugging Face's Llama implementation, the
interleaved and halves layouts giving the same scores, and permutation equivariance of attention
without positions."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from course_utils.attention.dot_product import scaled_dot_product_attention
from course_utils.positions import (LearnedPositionEmbedding, alibi_bias, alibi_slopes, closest_positions, halves_order,
                                    rope_rotate, shift_rotation, sinusoid_frequencies, sinusoidal_encoding)


def _formula(pos: int, j: int, d_model: int) -> float:
    angle = pos / 10000 ** ((j - j % 2) / d_model)
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


def test_sinusoidal_matches_the_formula_elementwise():
    pe = sinusoidal_encoding(50, 16, dtype=torch.float64)
    expected = torch.tensor([[_formula(p, j, 16) for j in range(16)] for p in range(50)], dtype=torch.float64)
    torch.testing.assert_close(pe, expected)


def test_worked_d_model_4_table():
    pe = sinusoidal_encoding(4, 4, dtype=torch.float64)
    rounded = [[round(v, 3) + 0.0 for v in row] for row in pe.tolist()]
    assert rounded == [[0.0, 1.0, 0.0, 1.0], [0.841, 0.540, 0.010, 1.0], [0.909, -0.416, 0.020, 1.0], [0.141, -0.990, 0.030, 1.0]]


@pytest.mark.parametrize("k", [1, 3, 17])
def test_shift_is_a_fixed_rotation(k):
    d_model, n = 32, 60
    pe = sinusoidal_encoding(n + k, d_model, dtype=torch.float64)
    R = shift_rotation(k, d_model)
    torch.testing.assert_close(pe[k:], pe[:n] @ R.T)  # row form of PE(pos + k) = R_k · PE(pos)
    torch.testing.assert_close(R @ R.T, torch.eye(d_model, dtype=torch.float64))  # a rotation


def test_sin2_cos2_from_the_addition_formulas():
    R = shift_rotation(1, 2)
    sin2, cos2 = (R @ torch.tensor([math.sin(1), math.cos(1)], dtype=torch.float64)).tolist()
    assert sin2 == pytest.approx(math.sin(2)) and cos2 == pytest.approx(math.cos(2))


def test_closest_positions_against_brute_force():
    table = torch.randn(30, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    best = min((float((table[i] - table[j]).norm()), i, j) for i, j in itertools.combinations(range(30), 2))
    distance, i, j, n_tied = closest_positions(table)
    assert (i, j) == best[1:] and distance == pytest.approx(best[0]) and n_tied == 1
    with pytest.raises(ValueError, match="n_ctx >= 2"):
        closest_positions(table[:1])
    with pytest.raises(ValueError, match="atol"):
        closest_positions(table, atol=-1.0)


@pytest.mark.parametrize("seed", range(5))
def test_closest_positions_breaks_ties_by_the_first_pair_whatever_the_rounding(seed):
    # Points 0, 1, 2, 3 evenly spaced on a line: pairs (0, 1), (1, 2), (2, 3) tie exactly. Rounding-sized
    # noise (1e-12) decides which is smallest; the rule must not care, and must count the three.
    gen = torch.Generator().manual_seed(seed)
    table = torch.tensor([[0.0], [1.0], [2.0], [3.0], [10.0]], dtype=torch.float64)
    noisy = table + 1e-12 * torch.randn(table.shape, generator=gen, dtype=torch.float64)
    assert closest_positions(noisy)[1:] == (0, 1, 3)
    assert closest_positions(noisy, atol=0.0).n_tied == 1  # no tolerance: the noise picks one
    assert closest_positions(noisy.flip(0))[1:] == (1, 2, 3)  # first in order of the reversed table


def test_sinusoidal_ties_are_found_and_give_the_same_pair_at_any_thread_count():
    pe = sinusoidal_encoding(512, 512, dtype=torch.float64)
    threads = torch.get_num_threads()
    try:
        found = []
        for n in (1, 2):
            torch.set_num_threads(n)
            found.append([closest_positions(pe[:, cols])[1:] for cols in (slice(0, 1), slice(0, 2), slice(None))])
    finally:
        torch.set_num_threads(threads)
    assert found[0] == found[1]
    one_sine, one_pair, whole = found[0]
    assert one_sine == (11, 344, 1)  # a genuine near-coincidence: sin 11 and sin 344 differ by 1.3e-7
    assert one_pair == (0, 333, 179)  # the pair's distance depends only on the offset: 333 apart ties 179 times
    assert whole == (0, 1, 511)  # every pair of neighbours is equally far apart


def test_one_sine_is_ambiguous_but_the_whole_table_is_not():
    assert math.sin(math.radians(30)) == pytest.approx(math.sin(math.radians(150)))  # the clock: 1 and 5 o'clock
    assert math.cos(math.radians(30)) == pytest.approx(-math.cos(math.radians(150)))  # the cosine tells them apart
    pe = sinusoidal_encoding(512, 512, dtype=torch.float64)
    one_sine = closest_positions(pe[:, :1]).distance
    one_pair = closest_positions(pe[:, :2]).distance
    whole, i, j, _ = closest_positions(pe)
    assert one_sine < 1e-5 and one_pair < 0.05  # two positions far apart look (almost) alike
    neighbours = float((pe[1] - pe[0]).norm())
    assert j == i + 1 and whole == pytest.approx(neighbours) and whole > 3  # all 512 positions are far apart


def test_halves_layout_is_the_interleaved_one_stored_in_another_order():
    gen = torch.Generator().manual_seed(6)
    q, k = torch.randn(2, 7, 16, generator=gen, dtype=torch.float64), torch.randn(2, 7, 16, generator=gen, dtype=torch.float64)
    order = halves_order(16)
    assert order.tolist() == [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
    torch.testing.assert_close(rope_rotate(q[..., order], layout="halves"), rope_rotate(q)[..., order])
    scores_interleaved = rope_rotate(q) @ rope_rotate(k).transpose(-2, -1)
    scores_halves = rope_rotate(q[..., order], layout="halves") @ rope_rotate(k[..., order], layout="halves").transpose(-2, -1)
    torch.testing.assert_close(scores_halves, scores_interleaved)  # same attention scores either way
    # but the layouts are not interchangeable on the same stored vector
    assert not torch.allclose(rope_rotate(q, layout="halves"), rope_rotate(q))
    with pytest.raises(ValueError, match="layout must be one of"):
        rope_rotate(q, layout="llama")


def test_learned_positions():
    W = LearnedPositionEmbedding(n_ctx=8, d_model=4)
    assert W(5).shape == (5, 4)
    assert sum(p.numel() for p in W.parameters()) == 8 * 4
    with pytest.raises(ValueError, match="longer than n_ctx=8"):
        W(9)


def _rope_complex(x: torch.Tensor, positions: torch.Tensor, base=10000.0) -> torch.Tensor:
    # independent oracle: pair (a, b) as the complex number a + ib, multiply by e^{i·pos·θ}
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    rot = torch.polar(torch.ones_like(theta), positions.to(torch.float64)[:, None] * theta)
    return torch.view_as_real(z * rot).reshape(x.shape).to(x.dtype)


def test_rope_matches_complex_multiplication():
    x = torch.randn(2, 3, 10, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(rope_rotate(x), _rope_complex(x, torch.arange(10)))
    pos = torch.tensor([5, 0, 2, 9, 100, 3, 3, 1, 7, 4])
    torch.testing.assert_close(rope_rotate(x, pos), _rope_complex(x, pos))


def test_rope_matches_hugging_face_llama_up_to_feature_order():
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    d_head, T = 8, 12
    x = torch.randn(1, 2, T, d_head, generator=torch.Generator().manual_seed(1))
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d_head, 2).float() / d_head))
    freqs = torch.arange(T).float()[:, None] * inv_freq  # HF's layout: cat(freqs, freqs)
    cos, sin = torch.cat([freqs, freqs], -1).cos()[None], torch.cat([freqs, freqs], -1).sin()[None]
    perm = torch.cat([torch.arange(0, d_head, 2), torch.arange(1, d_head, 2)])  # pairs (2i, 2i+1) -> (i, i + d/2)
    hf, _ = llama.apply_rotary_pos_emb(x[..., perm], x[..., perm], cos, sin)
    torch.testing.assert_close(rope_rotate(x)[..., perm], hf, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rope_rotate(x[..., perm], layout="halves"), hf, rtol=1e-5, atol=1e-5)  # GPT-NeoX's and Hugging Face's layout


def test_rope_scores_depend_only_on_the_offset():
    gen = torch.Generator().manual_seed(2)
    q, k = torch.randn(16, dtype=torch.float64, generator=gen), torch.randn(16, dtype=torch.float64, generator=gen)
    def score(m, n):
        qm = rope_rotate(q[None], torch.tensor([m]))[0]
        kn = rope_rotate(k[None], torch.tensor([n]))[0]
        return float(qm @ kn)
    for offset in (0, 3, 11):
        values = [score(m + offset, m) for m in (0, 7, 50, 1000)]
        assert max(values) - min(values) < 1e-9
    assert abs(score(3, 0) - score(5, 0)) > 1e-3  # and it does depend on the offset
    # length is preserved: a rotation
    torch.testing.assert_close(rope_rotate(q[None].repeat(5, 1)).norm(dim=-1), q.norm().repeat(5))


def test_attention_without_positions_is_permutation_equivariant():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(7, 16, dtype=torch.float64, generator=gen)
    W_Q, W_K, W_V = (torch.randn(16, 4, dtype=torch.float64, generator=gen) for _ in range(3))
    def attend(inp):
        return scaled_dot_product_attention(inp @ W_Q, inp @ W_K, inp @ W_V)
    perm = torch.randperm(7, generator=gen)
    torch.testing.assert_close(attend(x[perm]), attend(x)[perm])
    pe = sinusoidal_encoding(7, 16, dtype=torch.float64)
    assert not torch.allclose(attend(x[perm] + pe), attend(x + pe)[perm])  # positions break the symmetry


def test_bad_input():
    with pytest.raises(ValueError, match="d_model must be even"):
        sinusoidal_encoding(4, 5)
    with pytest.raises(ValueError, match="n_ctx must be a positive int"):
        sinusoidal_encoding(0, 4)
    with pytest.raises(ValueError, match=r"d_head \(the last dim of x\) must be even"):
        rope_rotate(torch.zeros(3, 5))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., pos, d_head\), got shape \(4,\)"):
        rope_rotate(torch.zeros(4))
    with pytest.raises(ValueError, match=r"positions must be a tensor of shape \(3,\), got \(2,\)"):
        rope_rotate(torch.zeros(3, 4), torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="floating-point"):
        rope_rotate(torch.zeros(3, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"^layout must be one of \('interleaved', 'halves'\), got 'pairs'$"):
        rope_rotate(torch.zeros(3, 4), layout="pairs")


def test_rope_builds_its_angles_on_the_device_of_x():
    assert sinusoid_frequencies(4, device="meta").device.type == "meta"
    assert sinusoid_frequencies(4).device.type == "cpu"  # default unchanged
    x = torch.empty(2, 5, 8, device="meta")
    assert rope_rotate(x, torch.arange(5)).device.type == "meta"  # CPU positions follow x
    assert rope_rotate(x, layout="halves").device.type == "meta"


@pytest.mark.gpu
def test_rope_layouts_and_closest_positions_follow_the_device():
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(7))
    order = halves_order(8)
    for layout, inp in (("interleaved", x), ("halves", x[..., order])):
        gpu = rope_rotate(inp.cuda(), layout=layout)
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), rope_rotate(inp, layout=layout), rtol=1e-5, atol=1e-5)
        cpu_positions = torch.arange(6)  # positions on the CPU, x on the GPU: the angles are made on the GPU
        torch.testing.assert_close(rope_rotate(inp.cuda(), cpu_positions, layout=layout), gpu)
    pe = sinusoidal_encoding(64, 16, dtype=torch.float64)
    assert closest_positions(pe.cuda())[1:] == closest_positions(pe)[1:]


def test_your_cat_is_a_lovely_cat():
    # the two CATs share their embedding but get different inputs once positions are added;
    # the position rows depend only on position and d_model, never on the sentence
    ids = torch.tensor([1, 5, 4, 2, 0, 5])  # YOUR CAT IS A LOVELY CAT
    W_E = torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    X = W_E[ids] + sinusoidal_encoding(6, 8, dtype=torch.float64)
    assert torch.equal(W_E[ids][1], W_E[ids][5]) and not torch.allclose(X[1], X[5])
    torch.testing.assert_close(sinusoidal_encoding(6, 8)[1], sinusoidal_encoding(4, 8)[1], rtol=0, atol=0)
    with torch.device("meta"):
        assert LearnedPositionEmbedding(n_ctx=2048, d_model=12288).W_pos.numel() == 2048 * 12288


def test_alibi_slopes_hand_worked_for_8_heads_and_against_bloom():
    assert alibi_slopes(8).tolist() == [1 / 2 ** h for h in range(1, 9)]  # the paper's 1/2, 1/4, ..., 1/256
    assert alibi_slopes(6).tolist() == [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]  # 4 heads' slopes, then 8's odd ones
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    for n_heads in (1, 6, 12, 16, 20):
        alibi = bloom.build_alibi_tensor(torch.ones(1, 3), n_heads, torch.float64)  # (heads, 1, 3): slope × key position
        torch.testing.assert_close(alibi_slopes(n_heads), alibi[:, 0, 1])


def test_alibi_bias_is_causal_and_linear_in_distance():
    bias = alibi_bias(2, 4)
    assert bias.shape == (2, 4, 4) and torch.isinf(bias[:, 0, 1:]).all() and (bias[:, 1:, 0] < 0).all()
    assert bias[0, 3].tolist() == [-3 / 16, -2 / 16, -1 / 16, 0.0]  # 2 heads: slopes 2^(-8/2) and 2^(-16/2)
    assert bias[1, 2].tolist() == [-2 / 256, -1 / 256, 0.0, -math.inf]
    with pytest.raises(ValueError, match="n_heads must be a positive int"):
        alibi_bias(0, 4)
