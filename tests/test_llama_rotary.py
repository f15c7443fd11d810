"""Rotary positions inside attention (course_utils.llama.rotary, .attention): any offset, both pair
layouts and the weight permutation between them, and the attention layer's cached path."""

from __future__ import annotations

import pytest
import torch

from course_utils.llama import RotaryAttention, rotate_queries_keys, to_halves_layout, to_interleaved_layout
from course_utils.positions import halves_order, rope_rotate
from course_utils.tolerances import tolerance

LAYOUTS = ["halves", "interleaved"]


def _qk(n_heads=4, n_kv_heads=2, pos=9, d_head=8, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, n_heads, pos, d_head, generator=g, dtype=dtype)
    return q, torch.randn(2, n_kv_heads, pos, d_head, generator=g, dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rows_after_an_offset_are_rotated_by_their_true_positions(layout):
    q, k = _qk()
    full_q, full_k = rotate_queries_keys(q, k, layout=layout)
    late_q, late_k = rotate_queries_keys(q[:, :, 5:], k[:, :, 5:], offset=5, layout=layout)
    torch.testing.assert_close(late_q, full_q[:, :, 5:]), torch.testing.assert_close(late_k, full_k[:, :, 5:])
    torch.testing.assert_close(full_q, rope_rotate(q, layout=layout))  # notebook 02's rotation, per head
    assert not torch.allclose(rotate_queries_keys(q[:, :, 5:], k[:, :, 5:], layout=layout)[0], late_q)  # offset matters


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scores_depend_only_on_the_distance_between_positions(layout):
    q, k = _qk(n_kv_heads=4)
    scores = [torch.einsum("bhqd,bhkd->bhqk", *rotate_queries_keys(q, k, offset, layout=layout)) for offset in (0, 13)]
    torch.testing.assert_close(scores[0], scores[1], rtol=1e-9, atol=1e-9)
    assert not torch.allclose(scores[0], q @ k.transpose(-1, -2))  # the rotation changed them


def test_the_layout_permutation_is_notebook_02s_and_is_undone():
    W = torch.randn(3, 5, 8, dtype=torch.float64)
    torch.testing.assert_close(to_halves_layout(W), W[..., halves_order(8)], rtol=0, atol=0)
    assert torch.equal(to_interleaved_layout(to_halves_layout(W)), W)
    assert torch.equal(to_halves_layout(to_interleaved_layout(W)), W)
    assert to_halves_layout(torch.arange(4.0).reshape(1, 1, 4)).tolist() == [[[0.0, 2.0, 1.0, 3.0]]]


def _attention(layout, n_heads=4, n_kv_heads=2, d_model=32, seed=0):
    return RotaryAttention(d_model, n_heads, n_kv_heads, base=500.0, layout=layout,
                           generator=torch.Generator().manual_seed(seed)).double()


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_interleaved_rope_with_permuted_weights_equals_rotate_half_with_the_original(n_kv_heads):
    halves, interleaved = _attention("halves", n_kv_heads=n_kv_heads), _attention("interleaved", n_kv_heads=n_kv_heads)
    with torch.no_grad():
        interleaved.W_Q.copy_(to_interleaved_layout(halves.W_Q))
        interleaved.W_K.copy_(to_interleaved_layout(halves.W_K))
    x = torch.randn(2, 7, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(interleaved(x), halves(x), rtol=1e-12, atol=1e-12)
    unpermuted = _attention("interleaved", n_kv_heads=n_kv_heads)  # the same weights without the conversion
    assert (unpermuted(x) - halves(x)).abs().max() > 1e-3


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_cached_attention_equals_the_full_causal_forward_and_the_fused_kernel(layout, n_kv_heads):
    attn = _attention(layout, n_kv_heads=n_kv_heads).float()
    x = torch.randn(2, 9, 32, generator=torch.Generator().manual_seed(2))
    full = attn(x)
    out, k, v = attn.forward_cached(x[:, :6])
    assert k.shape == v.shape == (2, n_kv_heads, 6, 8)  # the cache holds n_kv_heads heads, not n_heads
    steps = [out]
    for p in range(6, 9):
        out, k, v = attn.forward_cached(x[:, p : p + 1], k, v)
        steps.append(out)
    rtol, atol = tolerance(torch.float32)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=rtol, atol=10 * atol)
    torch.testing.assert_close(attn(x, impl="fused"), full, rtol=rtol, atol=10 * atol)
    changed = x.clone()
    changed[:, 5] += 1.0  # a later token cannot change an earlier output (causal)
    torch.testing.assert_close(attn(changed)[:, :5], full[:, :5], rtol=0, atol=0)


def _past(kv_heads=2, dtype=torch.float64):
    return torch.ones(2, kv_heads, 4, 8, dtype=dtype), torch.ones(2, kv_heads, 4, 8, dtype=dtype)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: rotate_queries_keys(*_qk(), offset=-1), ValueError, "offset must be a non-negative int"),
        (lambda: rotate_queries_keys(*_qk(), offset=1.5), TypeError, "offset must be a non-negative int"),
        (lambda: rotate_queries_keys(*_qk(), layout="pairs"), ValueError, "layout must be one of"),
        (lambda: rotate_queries_keys(*_qk(), base=0), ValueError, "base must be a positive"),
        (lambda: rotate_queries_keys(torch.ones(2, 3, 4), torch.ones(2, 3, 4)), ValueError, "q must have shape"),
        (lambda: rotate_queries_keys(*_qk(d_head=5)), ValueError, "must be even"),
        (lambda: rotate_queries_keys(_qk()[0], _qk(pos=4)[1]), ValueError, "q and k must share"),
        (lambda: rotate_queries_keys(_qk()[0].long(), _qk()[1]), TypeError, "q must be a floating-point"),
        (lambda: to_halves_layout(torch.ones(4, 6)), ValueError, r"W must have shape \(head, d_model, d_head\)"),
        (lambda: to_interleaved_layout(torch.ones(2, 4, 3)), ValueError, "d_head .* must be even"),
        (lambda: RotaryAttention(12, 4, 2), ValueError, "d_head.* must be even"),
        (lambda: RotaryAttention(8, 2, 1, layout="rows"), ValueError, "layout must be one of"),
        (lambda: _attention("halves").forward_cached(torch.ones(2, 3, 32).double(), torch.ones(2, 2, 4, 8).double()),
         TypeError, "past_v must be a tensor"),
        (lambda: _attention("halves").forward_cached(torch.ones(2, 3, 32).double(), *_past(kv_heads=4)),
         ValueError, r"past_k must have shape \(2, 2, 'n_past', 8\)"),
        (lambda: _attention("halves").forward_cached(torch.ones(2, 3, 32).double(), *_past(dtype=torch.float32)),
         TypeError, "past_k must be torch.float64"),
        (lambda: _attention("halves")(torch.ones(2, 3, 32).double(), impl="flash"), ValueError, "impl must be one of"),
        (lambda: _attention("halves")(torch.ones(2, 3, 31).double()), ValueError, "x must have shape"),
    ],
)
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
