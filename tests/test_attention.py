"""Scaled dot-product attention: hand-derived values, PyTorch's own SDPA as the oracle (float32 and
float64, masks, batch and head dims), fused == reference, and clear errors on bad input."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from course_utils.attention.dot_product import attention_pattern, attention_scores, scaled_dot_product_attention
from course_utils.tolerances import tolerance


def _qkv(shape_q, shape_k, d_v, dtype=torch.float64, seed=0, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*shape_q, generator=gen, dtype=dtype).to(device)
    k = torch.randn(*shape_k, generator=gen, dtype=dtype).to(device)
    v = torch.randn(*shape_k[:-1], d_v, generator=gen, dtype=dtype).to(device)
    return q, k, v


def _assert_close(got, expected):
    rtol, atol = tolerance(expected.dtype, expected.device)
    torch.testing.assert_close(got, expected, rtol=rtol, atol=atol)


# -- hand-derived values ------------------------------------------------------------------------
def test_the_cat_sat_worked_example():
    # the / cat / sat with d_model = 4, d_k = 2 and the worked W_Q, W_K, W_V; all hand-derived
    x = torch.tensor([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]], dtype=torch.float64)
    W_Q = torch.tensor([[1, 0], [0, 1], [1, 0], [0, 1]], dtype=torch.float64)
    W_K = torch.tensor([[0, 1], [1, 0], [0, 1], [1, 0]], dtype=torch.float64)
    W_V = torch.tensor([[1, 0], [0, 1], [0, 0], [0, 0]], dtype=torch.float64)
    q, k, v = x @ W_Q, x @ W_K, x @ W_V
    assert q.tolist() == [[2, 0], [0, 4], [2, 2]] and k.tolist() == [[0, 2], [4, 0], [2, 2]]
    scores = attention_scores(q, k)
    s = 8 / math.sqrt(2)  # cat's query [0, 4] against the keys of the / cat / sat: 8, 0, 8
    _assert_close(scores[1], torch.tensor([s, 0.0, s], dtype=torch.float64))
    e = math.exp(s)
    weights = attention_pattern(q, k)[1]
    _assert_close(weights, torch.tensor([e, 1.0, e], dtype=torch.float64) / (2 * e + 1))
    out = scaled_dot_product_attention(q, k, v)[1]
    _assert_close(out, torch.tensor([2 * e, e + 2], dtype=torch.float64) / (2 * e + 1))
    assert [round(t, 3) for t in out.tolist()] == [0.998, 0.503]
    # the notebook prints both: e^(8/√2) = 286.2 but e^5.66 (the score rounded) = 287.1, and cat's
    # weighted value is 0.003 unrounded but 0.004 from the rounded weight 0.002 (the seed's figure)
    assert f"{e:.1f}" == "286.2" and f"{math.exp(round(s, 2)):.1f}" == "287.1"
    cat_weight = weights[1].item()
    assert f"{cat_weight * v[1, 1].item():.3f}" == "0.003" and f"{round(cat_weight, 3) * v[1, 1].item():.3f}" == "0.004"


def test_equal_scores_average_the_values():
    q = torch.tensor([[1.0, 0.0]])
    k = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    _assert_close(scaled_dot_product_attention(q, k, v), torch.tensor([[0.5, 0.5]]))


def test_pattern_rows_sum_to_one_and_masked_entries_are_zero():
    q, k, _ = _qkv((2, 3, 5, 4), (2, 3, 6, 4), 2)
    mask = torch.rand(5, 6, generator=torch.Generator().manual_seed(1)) > 0.4
    mask[:, 0] = True
    pattern = attention_pattern(q, k, mask)
    _assert_close(pattern.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64))
    assert (pattern[..., ~mask] == 0).all()


# -- oracle: torch SDPA --------------------------------------------------------------------------
SHAPES = [
    ((4, 8), (6, 8), 3),  # no batch
    ((2, 5, 16), (2, 7, 16), 16),  # batch
    ((2, 3, 5, 8), (2, 3, 5, 8), 4),  # batch, head
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape_q,shape_k,d_v", SHAPES)
@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_agrees_with_torch_sdpa_without_mask(dtype, shape_q, shape_k, d_v, impl):
    q, k, v = _qkv(shape_q, shape_k, d_v, dtype)
    expected = F.scaled_dot_product_attention(q, k, v)
    _assert_close(scaled_dot_product_attention(q, k, v, impl=impl), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape_q,shape_k,d_v", SHAPES)
@pytest.mark.parametrize("mask_kind", ["causal_like", "random_full_shape", "per_key_padding"])
def test_agrees_with_torch_sdpa_with_mask(dtype, shape_q, shape_k, d_v, mask_kind):
    q, k, v = _qkv(shape_q, shape_k, d_v, dtype, seed=3)
    q_pos, k_pos = shape_q[-2], shape_k[-2]
    if mask_kind == "causal_like":
        mask = torch.ones(q_pos, k_pos, dtype=torch.bool).tril()
    elif mask_kind == "random_full_shape":
        mask = torch.rand(*shape_q[:-1], k_pos, generator=torch.Generator().manual_seed(4)) > 0.5
        mask[..., 0] = True  # every row keeps one key, so the oracle has no fully masked rows
    else:
        mask = torch.ones(k_pos, dtype=torch.bool)
        mask[-2:] = False  # padding: the last two keys are never attended
    oracle_mask = mask if mask.ndim >= 2 else mask[None, :]  # torch wants (q_pos or 1, k_pos) here
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=oracle_mask)
    _assert_close(scaled_dot_product_attention(q, k, v, mask), expected)
    _assert_close(scaled_dot_product_attention(q, k, v, mask, impl="fused"), expected)


def test_oracle_float_mask_equivalent():
    # a -inf additive mask is what a boolean False means; compare with torch's additive form
    q, k, v = _qkv((2, 4, 8), (2, 4, 8), 8)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    additive = torch.zeros(4, 4, dtype=torch.float64).masked_fill(~mask, float("-inf"))
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    _assert_close(scaled_dot_product_attention(q, k, v, mask), expected)


@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_fully_masked_row_gives_zeros_not_nan(impl):
    q, k, v = _qkv((2, 3, 4), (2, 5, 4), 6)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    out = scaled_dot_product_attention(q, k, v, mask, impl=impl)
    assert not torch.isnan(out).any()
    assert (out[:, 1] == 0).all()
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(3, 5, dtype=torch.bool))
    _assert_close(out[:, [0, 2]], expected[:, [0, 2]])
    assert (attention_pattern(q, k, mask)[:, 1] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_equals_reference_with_big_heads(dtype):
    q, k, v = _qkv((1, 12, 64, 64), (1, 12, 64, 64), 64, dtype, seed=7)
    mask = torch.ones(64, 64, dtype=torch.bool).tril()
    ref = scaled_dot_product_attention(q, k, v, mask)
    fused = scaled_dot_product_attention(q, k, v, mask, impl="fused")
    _assert_close(fused, ref)


def test_gradients_agree_with_torch_sdpa():
    q, k, v = _qkv((2, 4, 8), (2, 6, 8), 3)
    mine = [t.clone().requires_grad_() for t in (q, k, v)]
    theirs = [t.clone().requires_grad_() for t in (q, k, v)]
    scaled_dot_product_attention(*mine).square().sum().backward()
    F.scaled_dot_product_attention(*theirs).square().sum().backward()
    for a, b in zip(mine, theirs):
        _assert_close(a.grad, b.grad)


def test_scores_scale_with_sqrt_d_head():
    q, k, _ = _qkv((3, 16), (4, 16), 1)
    _assert_close(attention_scores(q, k), (q @ k.T) / 4.0)


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_gpu_matches_cpu(impl):
    q, k, v = _qkv((2, 4, 32, 16), (2, 4, 32, 16), 16, torch.float32, seed=11)
    mask = torch.ones(32, 32, dtype=torch.bool).tril()
    cpu = scaled_dot_product_attention(q, k, v, mask, impl=impl)
    gpu = scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), mask.cuda(), impl=impl)
    assert gpu.device.type == "cuda"
    rtol, atol = tolerance(torch.float32, "cuda")
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=rtol, atol=atol)
    oracle = F.scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), attn_mask=mask.cuda())
    torch.testing.assert_close(gpu, oracle, rtol=rtol, atol=atol)


# -- bad input ----------------------------------------------------------------------------------
def _ok():
    return _qkv((2, 4, 8), (2, 5, 8), 3, torch.float32)


def _call(q, k, v, mask=None, **kw):
    return scaled_dot_product_attention(q, k, v, mask, **kw)


def test_different_d_head_is_named():
    q, k, v = _ok()
    with pytest.raises(ValueError, match=r"d_head.*\(2, 4, 8\).*\(2, 5, 7\)"):
        attention_scores(q, k[..., :7])


def test_wrong_rank_is_named():
    q, k, v = _ok()
    with pytest.raises(ValueError, match=r"q must have shape .*got shape \(8,\)"):
        attention_scores(q[0, 0], k)
    with pytest.raises(ValueError, match=r"same rank.*\(2, 4, 8\).*\(5, 8\)"):
        attention_scores(q, k[0])


def test_mismatched_batch_or_head_dims():
    q, k, v = _ok()
    with pytest.raises(ValueError, match=r"batch/head.*\(2, 4, 8\).*\(3, 5, 8\)"):
        attention_scores(q, torch.randn(3, 5, 8))
    with pytest.raises(ValueError, match=r"v must have the same batch/head dims"):
        _call(q, k, torch.randn(1, 5, 3))


def test_k_and_v_positions_must_match():
    q, k, v = _ok()
    with pytest.raises(ValueError, match=r"k_pos.*\(2, 5, 8\).*\(2, 4, 3\)"):
        _call(q, k, v[:, :4])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_non_finite_input_is_named(bad, which):
    tensors = dict(zip("qkv", _ok()))
    tensors[which][0, 0, 0] = bad
    with pytest.raises(ValueError, match=rf"^{which} contains NaN or inf"):
        _call(tensors["q"], tensors["k"], tensors["v"])


def test_empty_sequence():
    q, k, v = _ok()
    with pytest.raises(ValueError, match=r"q is empty.*\(2, 0, 8\)"):
        _call(q[:, :0], k, v)
    with pytest.raises(ValueError, match=r"k is empty"):
        _call(q, k[:, :0], v[:, :0])


def test_non_tensors_and_wrong_dtypes():
    q, k, v = _ok()
    with pytest.raises(TypeError, match=r"q must be a torch.Tensor.*got list"):
        attention_scores([[1.0]], k)
    with pytest.raises(TypeError, match=r"k must be a floating-point tensor.*int64"):
        attention_scores(q, torch.ones(2, 5, 8, dtype=torch.int64))
    with pytest.raises(TypeError, match=r"same dtype"):
        attention_scores(q, k.double())
    with pytest.raises(TypeError, match=r"v must be a torch.Tensor.*got NoneType"):
        _call(q, k, None)


def test_bad_masks():
    q, k, v = _ok()
    with pytest.raises(TypeError, match=r"mask must be a torch.bool tensor.*float32"):
        _call(q, k, v, torch.ones(4, 5))
    with pytest.raises(TypeError, match=r"mask must be a torch.bool tensor.*list"):
        _call(q, k, v, [[True]])
    with pytest.raises(ValueError, match=r"mask of shape \(5, 4\) does not broadcast.*\(2, 4, 5\)"):
        _call(q, k, v, torch.ones(5, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask has shape \(1, 2, 4, 5\), more dims"):
        attention_pattern(q, k, torch.ones(1, 2, 4, 5, dtype=torch.bool))


def test_pattern_validates_q_and_k_before_the_mask():
    _, k, _ = _ok()
    with pytest.raises(TypeError, match=r"q must be a torch.Tensor.*got list"):
        attention_pattern([[1.0]], k, torch.ones(1, 5, dtype=torch.bool))


def test_unknown_impl():
    q, k, v = _ok()
    with pytest.raises(ValueError, match=r"impl must be one of.*'flash'"):
        _call(q, k, v, impl="flash")


@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_follows_input_device_and_dtype(impl):
    q, k, v = _qkv((2, 4, 8), (2, 5, 8), 3, torch.float64)
    assert _call(q, k, v, impl=impl).dtype == torch.float64
    meta = [x.to("meta") for x in (q, k, v)]  # another device than the default one, on any machine
    out = _call(*meta, mask=torch.ones(4, 5, dtype=torch.bool, device="meta"), impl=impl)
    assert out.device.type == "meta" and out.dtype == torch.float64 and out.shape == (2, 4, 3)


# -- one head as a module: torch.nn.MultiheadAttention (one head, no bias) is the oracle ------------
def test_attention_head_matches_torch_multihead_attention_with_one_head():
    from course_utils.attention.dot_product import AttentionHead

    torch.manual_seed(0)
    d_model = 8
    head = AttentionHead(d_model, d_model, init_std=0.5)  # torch's single head has d_head = d_model
    mha = torch.nn.MultiheadAttention(d_model, num_heads=1, bias=False, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([head.W_Q.T, head.W_K.T, head.W_V.T]))  # torch stores W.T
        mha.out_proj.weight.copy_(head.W_O.T)
    x = torch.randn(2, 5, d_model)
    expected, _ = mha(x, x, x, need_weights=False)
    _assert_close(head(x), expected)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    expected_causal, _ = mha(x, x, x, attn_mask=~causal, need_weights=False)  # torch: True = blocked
    _assert_close(head(x, causal), expected_causal)


def test_attention_head_shapes_and_bad_input():
    from course_utils.attention.dot_product import AttentionHead

    head = AttentionHead(16, 4)
    assert head(torch.randn(3, 7, 16)).shape == (3, 7, 16)
    assert sum(p.numel() for p in head.parameters()) == 4 * 16 * 4
    with pytest.raises(ValueError, match=r"d_model=16.*got \(3, 7, 15\)"):
        head(torch.randn(3, 7, 15))


def test_cross_attention_head_matches_torch_multihead_attention_with_kdim_vdim():
    from course_utils.attention.dot_product import CrossAttentionHead

    torch.manual_seed(0)
    d_model, d_context = 8, 5
    head = CrossAttentionHead(d_model, d_context, d_model, init_std=0.5)  # torch's single head: d_head = d_model
    mha = torch.nn.MultiheadAttention(d_model, 1, bias=False, kdim=d_context, vdim=d_context, batch_first=True)
    with torch.no_grad():  # with kdim/vdim torch keeps separate q, k, v weights, each stored transposed
        mha.q_proj_weight.copy_(head.W_Q.T), mha.k_proj_weight.copy_(head.W_K.T), mha.v_proj_weight.copy_(head.W_V.T)
        mha.out_proj.weight.copy_(head.W_O.T)
    x, context = torch.randn(2, 3, d_model), torch.randn(2, 6, d_context)
    expected, _ = mha(x, context, context, need_weights=False)
    _assert_close(head(x, context), expected)
    with pytest.raises(ValueError, match=r"context must be .*\(\.\.\., pos, 5\), got \(2, 6, 8\)"):
        head(x, torch.randn(2, 6, d_model))


# -- saturation helpers and the d_k widget ---------------------------------------------------------
def test_pattern_entropy_extremes():
    from course_utils.attention.dot_product import pattern_entropy

    uniform = torch.full((2, 5), 0.2, dtype=torch.float64)
    one_hot = torch.tensor([[0.0, 1.0, 0.0]], dtype=torch.float64)
    _assert_close(pattern_entropy(uniform), torch.full((2,), math.log(5), dtype=torch.float64))
    assert pattern_entropy(one_hot).item() == 0.0


@pytest.mark.parametrize("d_k", [4, 64, 512])
def test_dot_product_variance_grows_like_d_k(d_k):
    from course_utils.attention.dot_product import random_scores

    raw = random_scores(300, 300, d_k, scaled=False, seed=1)  # 90,000 dot products
    scaled = random_scores(300, 300, d_k, scaled=True, seed=1)
    assert 0.85 * d_k < raw.var().item() < 1.15 * d_k  # var(q·k) = d_k for unit-variance entries
    assert 0.85 < scaled.var().item() < 1.15


def test_unscaled_softmax_saturates_as_d_k_grows():
    from course_utils.attention.dot_product import saturation_stats

    small, large = saturation_stats(8, 4, scaled=False), saturation_stats(8, 512, scaled=False)
    assert large["max_weight"] > 0.9 > small["max_weight"]
    scaled_small, scaled_large = saturation_stats(8, 4, scaled=True), saturation_stats(8, 512, scaled=True)
    assert abs(scaled_small["entropy"] - scaled_large["entropy"]) < 0.2  # scaling keeps it steady


def test_dk_widget_classes_and_readout(monkeypatch):
    pytest.importorskip("ipywidgets")
    import matplotlib

    matplotlib.use("Agg")
    from course_utils.viz.attention import dk_saturation_viewer

    monkeypatch.setattr("course_utils.viz.drawing.display", lambda *a, **k: None)
    viewer = dk_saturation_viewer("the cat sat on the mat".split(), d_k=4)
    assert "course-attention-viewer" in viewer._dom_classes
    slider, readout, figure = viewer.children
    assert "course-dk" in slider._dom_classes and "course-readout" in readout._dom_classes
    assert "course-figure" in figure._dom_classes
    assert readout.value.startswith("d_k = 4<br>") and "nan" not in readout.value
    slider.value = 512
    assert readout.value.startswith("d_k = 512<br>")


def test_pattern_stats_summarises_rows():
    from course_utils.attention.dot_product import pattern_stats

    stats = pattern_stats(torch.tensor([[0.5, 0.5], [1.0, 0.0]], dtype=torch.float64))
    assert stats["max_weight"] == pytest.approx(0.75)
    assert stats["entropy"] == pytest.approx(math.log(2) / 2)
