"""Grouped-query attention against PyTorch's SDPA (with ``enable_gqa`` and with K/V repeated by hand),
against ordinary multi-head attention (n_kv_heads = n_heads), and its KV-cache count."""

import pytest
import torch
import torch.nn.functional as F

from course_utils.attention.grouped_query import GroupedQueryAttention, kv_cache_values, repeat_kv
from course_utils.masking import causal_mask, padding_mask
from course_utils.attention.multihead import MultiHeadAttention

F64 = torch.float64


def _x(pos=6, d_model=16):
    return torch.randn(2, pos, d_model, generator=torch.Generator().manual_seed(1), dtype=F64)


def test_repeat_kv_gives_each_group_its_head():
    kv = torch.arange(2.0).reshape(1, 2, 1, 1)  # kv heads a=0, b=1
    assert repeat_kv(kv, 4).flatten().tolist() == [0.0, 0.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="multiple"):
        repeat_kv(kv, 3)
    with pytest.raises(ValueError, match="kv must"):
        repeat_kv(torch.zeros(2, 3), 2)


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_matches_torch_sdpa_with_enable_gqa_and_with_repeated_kv(n_kv_heads):
    layer = GroupedQueryAttention(16, 4, n_kv_heads, generator=torch.Generator().manual_seed(0)).double()
    x, mask = _x(), causal_mask(6)
    q, k, v = layer.qkv(x)
    assert k.shape == (2, n_kv_heads, 6, 4)
    by_hand = F.scaled_dot_product_attention(
        q, k.repeat_interleave(4 // n_kv_heads, 1), v.repeat_interleave(4 // n_kv_heads, 1), attn_mask=mask
    )
    gqa = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    expected = torch.einsum("bhpd,hdm->bpm", by_hand, layer.W_O)
    torch.testing.assert_close(torch.einsum("bhpd,hdm->bpm", gqa, layer.W_O), expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(layer(x, mask), expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(layer(x, mask, impl="fused"), expected, rtol=0, atol=1e-12)


def test_a_batch_mask_of_shape_batch_q_k_applies_to_every_head():
    layer = GroupedQueryAttention(16, 4, 2).double()
    x, mask = _x(), causal_mask(6) & padding_mask([6, 4], 6)  # (batch, q_pos, k_pos)
    for b in range(2):
        torch.testing.assert_close(layer(x, mask)[b], layer(x[b : b + 1], mask[b])[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(layer(x, mask, impl="fused"), layer(x, mask), rtol=0, atol=1e-12)


def test_as_many_kv_heads_as_query_heads_is_multi_head_attention():
    layer = GroupedQueryAttention(16, 4, 4).double()
    mha = MultiHeadAttention(16, 4, bias=False).double()
    mha.load_state_dict(layer.state_dict())
    torch.testing.assert_close(layer(_x(), causal_mask(6)), mha(_x(), causal_mask(6)), rtol=0, atol=1e-12)


def test_kv_cache_shrinks_with_the_kv_heads_and_bad_input_is_refused():
    assert kv_cache_values(1, 2, 4, 10) == 160
    assert sum(p.numel() for p in GroupedQueryAttention(16, 4, 1).parameters()) == 2 * 16 * 16 + 2 * 16 * 4
    with pytest.raises(ValueError, match="n_kv_heads"):
        GroupedQueryAttention(16, 4, 3)
    with pytest.raises(ValueError, match="impl"):
        GroupedQueryAttention(16, 4, 2)(_x().float(), impl="flash")
    with pytest.raises(ValueError, match="x must"):
        GroupedQueryAttention(16, 4, 2)(torch.zeros(2, 16))
    with pytest.raises(ValueError, match="n_ctx"):
        kv_cache_values(1, 2, 4, 0)
