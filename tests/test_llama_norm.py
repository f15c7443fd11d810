"""RMSNorm (course_utils.llama.norm) against torch.nn.RMSNorm and transformers' LlamaRMSNorm, half
precision included, and its argument checks."""

from __future__ import annotations

import pytest
import torch

from course_utils.llama import RMSNorm, rms_norm
from course_utils.tolerances import tolerance

pytest.importorskip("transformers")
from transformers.models.llama.modeling_llama import LlamaRMSNorm  # noqa: E402 (after the skip)


def _inputs(dtype=torch.float32, d_model=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 5, d_model, generator=g, dtype=torch.float64) * 3
    w = 1 + 0.1 * torch.randn(d_model, generator=g, dtype=torch.float64)
    return x.to(dtype), w.to(dtype)


def test_the_formula_by_hand():
    out = rms_norm(torch.tensor([3.0, 4.0]), eps=0)
    torch.testing.assert_close(out, torch.tensor([3.0, 4.0]) / 12.5**0.5)
    assert rms_norm(torch.tensor([[1e-8, 0.0]]), eps=1e-5).abs().max() < 1e-5  # ε inside the root keeps a tiny row tiny


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_equals_torch_rmsnorm(dtype):
    """torch applies the gain before rounding back to bfloat16, Llama after: within bfloat16's tolerance."""
    x, w = _inputs(dtype)
    ours, theirs = RMSNorm(64, eps=1e-6).to(dtype), torch.nn.RMSNorm(64, eps=1e-6).to(dtype)
    with torch.no_grad():
        ours.w.copy_(w), theirs.weight.copy_(w)
    rtol, atol = tolerance(dtype)
    torch.testing.assert_close(ours(x), theirs(x), rtol=rtol, atol=atol)
    torch.testing.assert_close(rms_norm(x, w, eps=1e-6), theirs(x), rtol=rtol, atol=atol)
    unit = rms_norm(x, eps=0).double()  # no gain: every vector has root-mean-square 1
    torch.testing.assert_close(unit.pow(2).mean(-1), torch.ones(3, 5, dtype=torch.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_equals_transformers_llama_rmsnorm_bit_for_bit(dtype):
    x, w = _inputs(dtype, d_model=256)
    ours, theirs = RMSNorm(256, eps=1e-5).to(dtype), LlamaRMSNorm(256, eps=1e-5).to(dtype)
    with torch.no_grad():
        ours.w.copy_(w), theirs.weight.copy_(w)
    out = ours(x)
    assert out.dtype == dtype
    assert torch.equal(out, theirs(x))  # both normalise in float32, cast back, then apply the gain


def test_half_precision_is_normalised_in_float32_and_cast_back():
    x = torch.full((2, 8), 300.0, dtype=torch.float16)  # 300² = 90,000 overflows float16 (max 65,504)
    naive = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)  # the planted mistake: squares in float16
    assert naive.abs().max() == 0  # x · rsqrt(inf) = 0: the whole vector is lost
    out = rms_norm(x)
    assert out.dtype == torch.float16
    torch.testing.assert_close(out, torch.ones(2, 8, dtype=torch.float16), rtol=1e-3, atol=1e-3)
    x, w = _inputs(torch.bfloat16)
    expected = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)).bfloat16() * w
    assert torch.equal(rms_norm(x, w), expected)


def test_has_a_gain_only():
    norm = RMSNorm(12)
    assert [(n, tuple(p.shape)) for n, p in norm.named_parameters()] == [("w", (12,))]
    assert torch.equal(norm.w, torch.ones(12))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: rms_norm(torch.ones(2, 3, dtype=torch.long)), TypeError, "x must be a floating-point tensor"),
        (lambda: rms_norm([1.0, 2.0]), TypeError, "x must be a torch.Tensor"),
        (lambda: rms_norm(torch.ones(2, 3), torch.ones(4)), ValueError, r"w must have shape \(3,\)"),
        (lambda: rms_norm(torch.ones(2, 3), eps=-1.0), ValueError, "eps must be a non-negative"),
        (lambda: rms_norm(torch.ones(2, 0)), ValueError, "non-empty last dimension"),
        (lambda: RMSNorm(0), ValueError, "d_model must be a positive int"),
        (lambda: RMSNorm(4, eps="small"), TypeError, "eps must be a number"),
        (lambda: RMSNorm(4)(torch.ones(2, 5)), ValueError, "x must have last dimension d_model=4"),
        (lambda: RMSNorm(4)(torch.ones(2, 4, dtype=torch.int32)), TypeError, "x must be a floating-point tensor"),
    ],
)
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
