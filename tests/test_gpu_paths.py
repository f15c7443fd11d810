"""The GPU path is the same code as the CPU path: positions, embeddings, the check machinery and
the validation layer give the CPU's answer on CUDA, with outputs on the input's device. Marked
``gpu``: skipped (by conftest.py) where CUDA is absent."""

from __future__ import annotations

import pytest
import torch

from course_utils import embeddings, positions, validate
from course_utils.checks import get_exercise
from course_utils.checks.compare import describe_mismatch
from course_utils.tolerances import tolerance

pytestmark = pytest.mark.gpu
CUDA = torch.device("cuda")


def _close(gpu: torch.Tensor, cpu: torch.Tensor) -> None:
    assert gpu.device.type == "cuda"
    rtol, atol = tolerance(cpu.dtype, "cuda")
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=rtol, atol=atol)


def test_embeddings_follow_cuda():
    gen = torch.Generator().manual_seed(0)
    W_E = torch.randn(50, 16, generator=gen)
    token_ids = torch.randint(0, 50, (3, 7), generator=gen)
    _close(embeddings.embed(token_ids.to(CUDA), W_E.to(CUDA)), embeddings.embed(token_ids, W_E))
    _close(embeddings.embed_via_one_hot(token_ids.to(CUDA), W_E.to(CUDA)), embeddings.embed_via_one_hot(token_ids, W_E))
    module = embeddings.TokenEmbedding(50, 16)
    expected = module(token_ids)
    _close(module.to(CUDA)(token_ids.to(CUDA)), expected)


def test_positions_follow_cuda():
    x = torch.randn(2, 4, 9, 8, generator=torch.Generator().manual_seed(1))
    _close(positions.rope_rotate(x.to(CUDA)), positions.rope_rotate(x))
    _close(positions.sinusoidal_encoding(12, 8).to(CUDA), positions.sinusoidal_encoding(12, 8))
    module = positions.LearnedPositionEmbedding(16, 8)
    expected = module(9)
    out = module.to(CUDA)(9)
    _close(out, expected)


def test_checks_judge_a_cuda_answer_like_a_cpu_one():
    exercise = get_exercise("stable_softmax")

    def on_gpu(x):
        y = x.to(CUDA)
        y = y - y.amax(dim=-1, keepdim=True)
        return y.exp() / y.exp().sum(dim=-1, keepdim=True)

    assert exercise.check(on_gpu).passed
    ones = torch.ones(3)
    assert describe_mismatch(ones, ones.to(CUDA)) is None
    assert "values differ" in describe_mismatch(ones, (ones * 2).to(CUDA))


def test_validation_reads_cuda_values():
    with pytest.raises(ValueError, match="contains NaN"):
        validate.float_tensor("q", torch.tensor([float("nan")], device=CUDA))
    with pytest.raises(ValueError, match=r"must lie in \[0, d_vocab=5\)"):
        validate.index_tensor("token_ids", torch.tensor([5], device=CUDA), 5)
