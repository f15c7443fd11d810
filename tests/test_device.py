"""Device choice and seeding."""

import random

import numpy as np
import pytest
import torch

from course_utils.env.device import describe_device, pick_device, seed_everything


def test_env_var_overrides(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    assert pick_device() == torch.device("cpu")


@pytest.mark.parametrize("cuda,mps,expected", [
    (True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu"),
])
def test_default_order_is_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    import course_utils.env.device as device_module

    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(device_module, "_mps_available", lambda: mps)
    assert pick_device() == torch.device(expected)


@pytest.mark.parametrize("bad", ["tpu", "gpu0", "CPUX"])
def test_unknown_device_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="must be one of"):
        pick_device(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
def test_requesting_missing_cuda_says_so():
    with pytest.raises(ValueError, match="CUDA is not available"):
        pick_device("cuda")


def test_seed_everything_makes_all_generators_repeat():
    seed_everything(123)
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(123)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first


@pytest.mark.parametrize("bad,error", [(1.5, TypeError), (True, TypeError), (-1, ValueError), (2**32, ValueError)])
def test_seed_everything_rejects_bad_seeds(bad, error):
    with pytest.raises(error, match="seed must"):
        seed_everything(bad)


def test_describe_cpu():
    assert describe_device(torch.device("cpu")).startswith("cpu (")


@pytest.mark.gpu
def test_pick_device_prefers_cuda_when_present(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    device = pick_device()
    assert device.type == "cuda"
    assert describe_device(device).startswith("cuda:")
