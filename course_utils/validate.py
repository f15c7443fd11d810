"""Argument checks shared by every public entry point of the library, one way to write each.

Each check returns the value it accepted (so ``n = positive_int("n_ctx", n_ctx)`` reads as one
line) and raises ``TypeError`` or ``ValueError`` naming the argument and what was expected:
``positive_int("n_heads", 0)`` -> ``ValueError: n_heads must be a positive int, got 0``.
Checks that need a tensor's *values* (finiteness, ranges) are skipped for tensors on the ``meta``
device, which carry shapes but no data, so every Core function can run on ``meta`` (the device
sweep in ``tests/test_core_devices.py``). Validate once where a value enters the library; internal
calls pass already-checked values on. Never ``assert`` (``python -O`` strips it).

Leaves out: checks that belong to one concept (a mask's broadcast rule lives with masking).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def _shape_of(x: Any) -> str:
    return f"shape {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__


def has_data(x: Tensor) -> bool:
    """False for a ``meta`` tensor (shapes only), whose values cannot be read."""
    return x.device.type != "meta"


def positive_int(name: str, value: Any, *, even: bool = False, why: str = "") -> int:
    """``value`` if it is an int >= 1 (booleans are not ints here); ``even=True`` also wants it even."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    if even and value % 2:
        raise ValueError(f"{name} must be even{f' ({why})' if why else ''}, got {value}")
    return value


def non_negative_int(name: str, value: Any) -> int:
    """``value`` if it is an int >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def number_in(name: str, value: Any, low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a float if ``low <= value <= high`` (either end may be open)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high or value != value:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return value


def float_tensor(name: str, x: Any, layout: str = "", *, min_dims: int = 1, finite: bool = True) -> Tensor:
    """``x`` if it is a floating-point tensor with at least ``min_dims`` dims (and finite values)."""
    expected = f" of shape {layout}" if layout else ""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor{expected}, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor{expected}, got dtype {x.dtype}")
    if x.ndim < min_dims:
        raise ValueError(f"{name} must have at least {min_dims} dims{expected}, got {_shape_of(x)}")
    if finite and has_data(x) and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or inf ({_shape_of(x)}); finite values are needed")
    return x


def bool_tensor(name: str, x: Any, meaning: str = "True = may attend") -> Tensor:
    """``x`` if it is a ``torch.bool`` tensor (a mask)."""
    if not isinstance(x, Tensor) or x.dtype != torch.bool:
        got = f"dtype {x.dtype}" if isinstance(x, Tensor) else type(x).__name__
        raise TypeError(f"{name} must be a torch.bool tensor ({meaning}), got {got}")
    return x


def index_tensor(name: str, x: Any, size: int, size_name: str = "d_vocab") -> Tensor:
    """``x`` if it is an integer tensor whose entries lie in ``[0, size)``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be an integer torch.Tensor, got {type(x).__name__}")
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"{name} must have an integer dtype (ids are row numbers), got {x.dtype}")
    if has_data(x) and x.numel() and (int(x.min()) < 0 or int(x.max()) >= size):
        raise ValueError(f"{name} must lie in [0, {size_name}={size}), got values from {int(x.min())} to "
                         f"{int(x.max())} (shape {tuple(x.shape)})")
    return x


def same_device(**tensors: Tensor) -> torch.device:
    """The one device all ``tensors`` are on; ``ValueError`` naming them if they differ."""
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{name} on {device}" for name, device in devices.items())
        raise ValueError(f"tensors must be on the same device, got {listed}")
    return next(iter(devices.values()))
