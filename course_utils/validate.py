"""Argument checks shared by every public entry point of the library, one way to write each.

Each check returns the value it accepted (so ``n = positive_int("n_ctx", n_ctx)`` reads as one
line) and raises ``TypeError`` or ``ValueError`` naming the argument and what was expected:
``positive_int("n_heads", 0)`` -> ``ValueError: n_heads must be a positive int, got 0``.
Checks that need a tensor's *values* (finiteness, ranges) are skipped for tensors on the ``meta``
device, which carry shapes but no data, so every Core function can run on ``meta`` (the device
sweep in ``tests/test_core_devices.py``). Validate once where a value enters the library; internal
calls pass already-checked values on. Never ``assert`` (``python -O`` strips it).

A scalar of the wrong type (``2.5`` or ``True`` for a count, ``"hot"`` for a temperature) raises
``ArgumentTypeError``, a ``TypeError`` that is also a ``ValueError``: earlier versions raised
``ValueError`` for it, and code that catches either keeps working. Tensor checks raise plain
``TypeError`` for a wrong type.

Leaves out: checks that belong to one concept (a mask's broadcast rule lives with masking).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


class ArgumentTypeError(TypeError, ValueError):
    """A scalar argument of the wrong type: ``except TypeError`` and ``except ValueError`` both catch it."""


def _shape_of(x: Any) -> str:
    return f"shape {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__


def has_data(x: Tensor) -> bool:
    """False for a ``meta`` tensor (shapes only), whose values cannot be read."""
    return x.device.type != "meta"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # True is an int to Python, not to us


def integer(name: str, value: Any) -> int:
    """``value`` if it is an int, of any sign: ``integer("k", 2.0)`` -> ``ArgumentTypeError``."""
    if not _is_int(value):
        raise ArgumentTypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def positive_int(name: str, value: Any, *, even: bool = False, why: str = "") -> int:
    """``value`` if it is an int >= 1 (booleans are not ints here); ``even=True`` also wants it even."""
    if not _is_int(value):
        raise ArgumentTypeError(f"{name} must be a positive int, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    if even and value % 2:
        raise ValueError(f"{name} must be even{f' ({why})' if why else ''}, got {value}")
    return value


def non_negative_int(name: str, value: Any) -> int:
    """``value`` if it is an int >= 0."""
    if not _is_int(value):
        raise ArgumentTypeError(f"{name} must be a non-negative int, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def int_at_least(name: str, value: Any, low: int, *, why: str = "") -> int:
    """``value`` if it is an int >= ``low``: ``int_at_least("k", 0, 1)`` -> ``ValueError: k must be at least 1, got 0``;
    ``why`` is added in brackets (``vocab_size must be at least 256 (the byte alphabet), got 8``)."""
    integer(name, value)
    if value < low:
        raise ValueError(f"{name} must be at least {low}{f' ({why})' if why else ''}, got {value}")
    return value


def int_in(name: str, value: Any, low: int, high: int, *, high_name: str = "") -> int:
    """``value`` if it is an int with ``low <= value <= high``: ``int_in("top_k", 0, 1, 4, high_name="d_vocab")``
    -> ``ValueError: top_k must be between 1 and d_vocab=4, got 0``."""
    integer(name, value)
    if not low <= value <= high:
        upper = f"{high_name}={high}" if high_name else f"{high}"
        raise ValueError(f"{name} must be between {low} and {upper}, got {value}")
    return value


def number(name: str, value: Any) -> float:
    """``value`` as a float if it is an int or a float (not a bool); no range check."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def positive_number(name: str, value: Any) -> float:
    """``value`` as a float if it is a finite number > 0: ``positive_number("lr", -1.0)`` -> ``ValueError``."""
    value = number(name, value)
    if not 0 < value < float("inf"):  # also False for NaN
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def non_negative_number(name: str, value: Any) -> float:
    """``value`` as a float if it is a finite number >= 0: ``non_negative_number("eps", -1)`` -> ``ValueError``."""
    value = number(name, value)
    if not 0 <= value < float("inf"):  # also False for NaN
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return value


def number_in(
    name: str, value: Any, low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> float:
    """``value`` as a float if ``low <= value <= high`` (either end may be open)."""
    value = number(name, value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high or value != value:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return value


def one_of(name: str, value: Any, choices: tuple) -> Any:
    """``value`` if it is one of ``choices``: ``one_of("layout", "rows", ("interleaved", "halves"))`` ->
    ``ValueError: layout must be one of ('interleaved', 'halves'), got 'rows'``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
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


def int_tensor(name: str, x: Any, why: str = "") -> Tensor:
    """``x`` if it is a tensor of an integer dtype (not bool); ``why`` is added to the message."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be an integer torch.Tensor, got {type(x).__name__}")
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"{name} must have an integer dtype{why}, got {x.dtype}")
    return x


def index_tensor(name: str, x: Any, size: int, size_name: str = "d_vocab") -> Tensor:
    """``x`` if it is an integer tensor whose entries lie in ``[0, size)``."""
    int_tensor(name, x, " (ids are row numbers)")
    if has_data(x) and x.numel() and (int(x.min()) < 0 or int(x.max()) >= size):
        raise ValueError(
            f"{name} must lie in [0, {size_name}={size}), got values from {int(x.min())} to "
            f"{int(x.max())} (shape {tuple(x.shape)})"
        )
    return x


def same_device(**tensors: Tensor) -> torch.device:
    """The one device all ``tensors`` are on; ``ValueError`` naming them if they differ."""
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{name} on {device}" for name, device in devices.items())
        raise ValueError(f"tensors must be on the same device, got {listed}")
    return next(iter(devices.values()))


def vocab_rows(name: str, x: Any, *, probs: bool = False) -> Tensor:
    """Logits (or, with ``probs=True``, probabilities) along a last dim of d_vocab, checked with one host sync.

    -inf logits are allowed (a masked token), a row of nothing but -inf, NaN and +inf are not; with
    ``probs=True`` also negative values and a row of zeros. Values are not read on the ``meta`` device.
    ``vocab_rows("logits", torch.tensor([0., float("nan")]))`` -> ``ValueError: logits contains NaN``.
    """
    float_tensor(name, x, "(..., d_vocab)", finite=False)
    if x.shape[-1] == 0:
        raise ValueError(f"{name} must have a non-empty last dimension (d_vocab), got shape {tuple(x.shape)}")
    if not has_data(x):
        return x
    checks = [x.isnan().any(), x.isposinf().any(), x.amax(dim=-1).isneginf().any()]
    if probs:
        checks += [(x < 0).any(), (x.sum(dim=-1) <= 0).any()]
    nan, pos_inf, empty_row, *more = torch.stack(checks).tolist()  # one transfer to the host, not five
    if nan:
        raise ValueError(f"{name} contains NaN")
    if pos_inf:
        raise ValueError(f"{name} contains +inf; use large finite values instead")
    if empty_row:
        raise ValueError(f"every entry of a row of {name} is -inf: there is no token left to choose")
    if probs and more[0]:
        raise ValueError("probs must be non-negative (pass probabilities, not logits)")
    if probs and more[1]:
        raise ValueError("every row of probs must have some positive probability (a row of zeros has no distribution)")
    return x
