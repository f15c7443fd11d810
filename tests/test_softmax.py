"""The reference softmax and masked softmax against torch's own, plus their edge cases."""

import pytest
import torch

from course_utils.softmax import masked_softmax, softmax


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_matches_torch(dtype, dim):
    x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(0), dtype=dtype) * 5
    torch.testing.assert_close(softmax(x, dim=dim), torch.softmax(x, dim=dim))


def test_softmax_survives_huge_logits():
    out = softmax(torch.tensor([10_000.0, 9_998.0, -10_000.0]))
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, torch.softmax(torch.tensor([2.0, 0.0, -20_000.0]), dim=-1))


@pytest.mark.parametrize("bad,error", [([1.0, 2.0], TypeError), (torch.tensor([1, 2]), TypeError), (torch.tensor(1.0), ValueError)])
def test_softmax_rejects_bad_input(bad, error):
    with pytest.raises(error, match="x must"):
        softmax(bad)


def test_masked_softmax_equals_renormalising_the_allowed_weights():
    scores = torch.randn(4, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mask = torch.ones(4, 6, dtype=torch.bool).tril()
    full = torch.softmax(scores, dim=-1) * mask
    torch.testing.assert_close(masked_softmax(scores, mask), full / full.sum(-1, keepdim=True))


def test_masked_softmax_matches_minus_inf_fill():
    scores = torch.randn(2, 3, 5, 5, generator=torch.Generator().manual_seed(2))
    mask = torch.rand(5, 5, generator=torch.Generator().manual_seed(3)) > 0.3
    mask[:, 0] = True  # no empty rows here
    expected = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    torch.testing.assert_close(masked_softmax(scores, mask), expected)


def test_fully_masked_row_is_zeros_not_nan():
    out = masked_softmax(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[True, False], [False, False]]))
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out, torch.tensor([[1.0, 0.0], [0.0, 0.0]]))


def test_masked_softmax_rejects_bad_masks():
    scores = torch.zeros(3, 3)
    with pytest.raises(TypeError, match="mask must be a torch.bool"):
        masked_softmax(scores, torch.ones(3, 3))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 2\)"):
        masked_softmax(scores, torch.ones(2, 2, dtype=torch.bool))


def test_the_in_place_masked_softmax_equals_the_public_one_and_reuses_its_buffer():
    from course_utils.softmax import masked_softmax_

    gen = torch.Generator().manual_seed(3)
    scores = torch.randn(2, 5, 6, generator=gen, dtype=torch.float64)
    mask = torch.rand(5, 6, generator=gen) > 0.4
    mask[2] = False  # a row with nothing allowed
    expected = masked_softmax(scores, mask)
    buffer = scores.clone()
    out = masked_softmax_(buffer, mask)
    assert out.data_ptr() == buffer.data_ptr(), "no grad: computed in place"
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    assert not out.isnan().any() and bool((out[:, 2] == 0).all())
    leaf = scores.clone().requires_grad_()
    with_grad = masked_softmax_(leaf, mask)  # autograd recording: out of place, leaf untouched
    torch.testing.assert_close(with_grad, expected)
    torch.testing.assert_close(leaf.detach(), scores)
    (with_grad * torch.arange(6.0, dtype=torch.float64)).sum().backward()
    assert leaf.grad is not None and bool(torch.isfinite(leaf.grad).all())
