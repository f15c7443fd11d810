"""Multi-head attention (weights stored per head: W_Q (n_heads, d_model, d_head) ...) against
torch.nn.MultiheadAttention and torch's fused SDPA, the per-head decomposition through W_O, and
parameter/FLOP counts against sum(p.numel()) and FlopCounterMode."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from course_utils.masking import causal_mask, padding_mask
from course_utils.attention.multihead import (
    FusedMultiHeadAttention,
    MultiHeadAttention,
    attention_cost,
    merge_heads,
    split_heads,
    to_fused,
    to_torch_mha,
)


def _module(d_model=24, n_heads=3, bias=True, seed=0):
    torch.manual_seed(seed)
    return MultiHeadAttention(d_model, n_heads, bias=bias).double()


def _x(batch=2, pos=7, d_model=24, seed=1):
    return torch.randn(batch, pos, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_split_heads_takes_contiguous_column_slices():
    x = _x()
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 7, 8)
    for h in range(3):
        torch.testing.assert_close(heads[:, h], x[..., 8 * h: 8 * (h + 1)])
    torch.testing.assert_close(merge_heads(heads), x)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "causal+padding"])
def test_matches_torch_multihead_attention_with_the_same_weights(bias, mask_kind):
    module, x = _module(bias=bias), _x()
    mask = {"none": None, "causal": causal_mask(7), "causal+padding": causal_mask(7) & padding_mask([5, 7], 7)}[mask_kind]
    torch_mha = to_torch_mha(module)
    torch_mask = None
    if mask is not None:  # torch wants (batch * n_heads, q, k) with True = blocked
        torch_mask = (~mask).expand(2, 7, 7).repeat_interleave(3, dim=0)
    expected, weights = torch_mha(x, x, x, attn_mask=torch_mask, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(module(x, mask), expected)
    torch.testing.assert_close(module.pattern(x, mask), weights)


def test_parameters_have_the_interpretability_layout():
    module = MultiHeadAttention(24, 3)
    shapes = {name: tuple(p.shape) for name, p in module.named_parameters()}
    assert shapes == {"W_Q": (3, 24, 8), "W_K": (3, 24, 8), "W_V": (3, 24, 8), "W_O": (3, 8, 24),
                      "b_Q": (3, 8), "b_K": (3, 8), "b_V": (3, 8), "b_O": (24,)}
    no_bias = MultiHeadAttention(24, 3, bias=False)
    assert [name for name, _ in no_bias.named_parameters()] == ["W_Q", "W_K", "W_V", "W_O"]
    assert no_bias.b_Q is None and no_bias.b_O is None


def test_head_h_is_the_h_th_column_block_of_a_wide_projection():
    """Stacking W_Q[h] side by side gives one (d_model, d_model) matrix whose product split_heads recovers."""
    module, x = _module(), _x()
    wide = torch.cat(list(module.W_Q), dim=1)  # (d_model, n_heads * d_head)
    q, _, _ = module.qkv(x)
    torch.testing.assert_close(q, split_heads(x @ wide + module.b_Q.reshape(-1), 3))


def test_init_std_draws_normal_weights_and_zero_biases():
    torch.manual_seed(0)
    module = MultiHeadAttention(256, 4, init_std=0.02)
    assert abs(module.W_Q.std().item() - 0.02) < 0.001
    assert torch.count_nonzero(module.b_Q) == 0 and torch.count_nonzero(module.b_O) == 0
    default = MultiHeadAttention(256, 4)
    assert default.W_O.abs().max() <= 1 / 16 and default.W_O.abs().max() > 0.9 / 16


def test_reference_and_fused_paths_agree_with_torch_sdpa():
    module, x = _module(), _x()
    q = split_heads(x @ torch.cat(list(module.W_Q), 1) + module.b_Q.reshape(-1), 3)
    k = split_heads(x @ torch.cat(list(module.W_K), 1) + module.b_K.reshape(-1), 3)
    v = split_heads(x @ torch.cat(list(module.W_V), 1) + module.b_V.reshape(-1), 3)
    z = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    oracle = merge_heads(z) @ module.W_O.reshape(24, 24) + module.b_O
    torch.testing.assert_close(module(x, causal_mask(7)), oracle)
    torch.testing.assert_close(module(x, causal_mask(7), impl="fused"), oracle)


def test_concat_then_W_O_equals_sum_of_each_heads_slice():
    module, x = _module(), _x()
    parts = module.per_head_contributions(x, causal_mask(7))
    assert parts.shape == (2, 3, 7, 24)
    torch.testing.assert_close(parts.sum(dim=1) + module.b_O, module(x, causal_mask(7)))


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_parameter_and_flop_counts_match_the_oracles_and_do_not_depend_on_n_heads(n_heads):
    d_model, n_ctx = 64, 50
    module = MultiHeadAttention(d_model, n_heads)
    cost = attention_cost(d_model, n_heads, n_ctx)
    assert cost["params"] == sum(p.numel() for p in module.parameters())
    assert cost["params"] == sum(p.numel() for p in torch.nn.MultiheadAttention(d_model, n_heads).parameters())
    with FlopCounterMode(display=False) as counter:
        module(torch.randn(1, n_ctx, d_model))
    assert cost["flops"] == counter.get_total_flops()
    assert cost == attention_cost(d_model, 1, n_ctx)


def test_paper_sized_layer_counts():
    cost = attention_cost(512, 8, 1000, bias=False)
    assert cost["params"] == 4 * 512 * 512 == 1_048_576


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_same_output_on_cuda(impl):
    module, x = _module(), _x()
    expected = module(x, causal_mask(7))
    got = module.to("cuda")(x.to("cuda"), causal_mask(7, device="cuda"), impl=impl)
    torch.testing.assert_close(got.cpu(), expected)
    theirs, _ = to_torch_mha(module)(x.cuda(), x.cuda(), x.cuda(), attn_mask=~causal_mask(7, device="cuda"), need_weights=False)
    torch.testing.assert_close(theirs.cpu(), expected)


@pytest.mark.parametrize("call,error,match", [
    (lambda: MultiHeadAttention(10, 3), ValueError, "divisible by n_heads"),
    (lambda: MultiHeadAttention(8, 0), ValueError, "n_heads must be a positive int"),
    (lambda: split_heads(torch.zeros(2, 3), 1), ValueError, r"shape \(batch, pos, d_model\)"),
    (lambda: merge_heads(torch.zeros(2, 3, 4)), ValueError, r"shape \(batch, head, pos, d_head\)"),
    (lambda: _module()(torch.zeros(1, 3, 5, dtype=torch.float64)), ValueError, "d_model=24"),
    (lambda: _module()(_x(), torch.ones(7, 7)), TypeError, "torch.bool"),
    (lambda: _module()(_x(), causal_mask(5)), ValueError, "does not broadcast"),
    (lambda: to_torch_mha(torch.nn.Linear(2, 2)), TypeError, "MultiHeadAttention"),
])
def test_bad_input_is_rejected_with_a_clear_message(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_fully_masked_row_gives_zero_attention_output_not_nan():
    module, x = _module(), _x(batch=1, pos=3)
    mask = torch.tensor([[False, False, False], [True, False, False], [True, True, True]])
    out = module(x, mask)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out[0, 0], module.b_O)  # nothing attended: only the output bias


def test_the_course_mask_reaches_torch_sdpa_as_is_and_nn_multihead_attention_inverted():
    """F.scaled_dot_product_attention's boolean attn_mask means True = may attend (the course's
    convention); nn.MultiheadAttention's means True = blocked. A random mask (not causal, so a
    transposed or inverted mask cannot pass by symmetry) shows which is which."""
    module, x = _module(), _x()
    gen = torch.Generator().manual_seed(3)
    mask = torch.rand(2, 7, 7, generator=gen) < 0.6
    mask[..., 0] = True  # every query may see at least one key
    ours = module(x, mask)
    q, k, v = module.qkv(x)
    z = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None])
    torch.testing.assert_close(torch.einsum("bhpd,hdm->bpm", z, module.W_O) + module.b_O, ours)
    torch_mask = (~mask).repeat_interleave(3, dim=0)  # (batch * n_heads, q, k), True = blocked
    theirs, _ = to_torch_mha(module)(x, x, x, attn_mask=torch_mask, need_weights=False)
    torch.testing.assert_close(theirs, ours)
    wrong, _ = to_torch_mha(module)(x, x, x, attn_mask=mask.repeat_interleave(3, dim=0), need_weights=False)
    assert not torch.allclose(wrong, ours)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_layer_matches_the_unfused_one_and_torch(causal):
    module, x = _module(), _x()
    fused = to_fused(module, causal=causal)
    assert set(dict(fused.named_parameters())) == {"W_QKV.weight", "W_QKV.bias", "W_O.weight", "W_O.bias"}
    mask = causal_mask(7) if causal else None
    torch.testing.assert_close(fused(x), module(x, mask), rtol=0, atol=1e-12)
    expected, _ = to_torch_mha(module)(x, x, x, attn_mask=None if mask is None else ~mask, need_weights=False)
    torch.testing.assert_close(fused(x), expected, rtol=0, atol=1e-12)


def test_fused_layer_refuses_bad_input():
    with pytest.raises(ValueError, match="n_heads"):
        FusedMultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="x must have shape"):
        FusedMultiHeadAttention(8, 2)(torch.randn(3, 8))
    with pytest.raises(TypeError, match="module"):
        to_fused(FusedMultiHeadAttention(8, 2))
