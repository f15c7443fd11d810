"""Compare an expected value with a student's, and describe the first difference in words.

Handles tensors, NumPy arrays, numbers, strings, and lists, tuples and dicts of those.
``describe_mismatch(1.0, 1.0)`` -> ``None``; ``describe_mismatch([1, 2], [1])`` -> ``'expected a
list of length 2, got length 1'``. NaNs in the same places count as equal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from course_utils.tolerances import tolerance


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "a tensor"
    if isinstance(value, np.ndarray):
        return "a NumPy array"
    return f"a {type(value).__name__}"


def _compare_tensors(expected: torch.Tensor, got: torch.Tensor, where: str) -> str | None:
    if tuple(got.shape) != tuple(expected.shape):
        return f"expected shape {tuple(expected.shape)}{where}, got {tuple(got.shape)}"
    if expected.is_floating_point() or expected.is_complex():
        if not (got.is_floating_point() or got.is_complex()):
            return f"expected a floating-point tensor{where}, got dtype {got.dtype}"
        rtol, atol = tolerance(expected.dtype, expected.device)
        exp64 = expected.detach().cpu().to(torch.float64)
        got64 = got.detach().cpu().to(torch.float64)
        if torch.isnan(got64).any() and not torch.isnan(exp64).any():
            return f"your result contains NaN{where}"
        if torch.isinf(got64).any() and not torch.isinf(exp64).any():
            return f"your result contains inf{where}"
        if not torch.allclose(got64, exp64, rtol=rtol, atol=atol, equal_nan=True):
            diff = (got64 - exp64).abs().nan_to_num(0.0)
            index = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
            return (f"values differ from the reference{where}: at index {index} expected "
                    f"{exp64[index].item():.6g}, got {got64[index].item():.6g}")
        return None
    if got.dtype != expected.dtype and got.is_floating_point():
        return f"expected dtype {expected.dtype}{where}, got {got.dtype}"
    if not torch.equal(got.cpu().to(expected.dtype), expected.cpu()):
        bad = (got.cpu().to(expected.dtype) != expected.cpu()).nonzero()[0].tolist()
        return f"values differ from the reference{where}: first at index {tuple(bad)}"
    return None


def describe_mismatch(expected: Any, got: Any, where: str = "") -> str | None:
    """``None`` when ``got`` matches ``expected`` (within the dtype's tolerance), else what differs."""
    if isinstance(expected, torch.Tensor):
        if isinstance(got, np.ndarray):
            got = torch.from_numpy(got)
        if not isinstance(got, torch.Tensor):
            return f"expected a tensor{where}, got {_kind(got)}"
        return _compare_tensors(expected, got, where)
    if isinstance(expected, np.ndarray):
        if not isinstance(got, (np.ndarray, torch.Tensor)):
            return f"expected an array{where}, got {_kind(got)}"
        got_t = got if isinstance(got, torch.Tensor) else torch.from_numpy(np.asarray(got))
        return _compare_tensors(torch.from_numpy(expected), got_t, where)
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        if type(got) is not type(expected) or got != expected:
            return f"expected {expected!r}{where}, got {got!r}"[:300]
        return None
    if isinstance(expected, (int, float, np.integer, np.floating)):
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, (int, float, np.integer, np.floating)):
            return f"expected a number{where}, got {_kind(got)}"
        if isinstance(expected, (int, np.integer)) and not isinstance(got, (int, np.integer)):
            if not float(got).is_integer():
                return f"expected the whole number {expected}{where}, got {got!r}"
        if math.isnan(float(expected)) and math.isnan(float(got)):
            return None
        if not math.isclose(float(got), float(expected), rel_tol=1e-6, abs_tol=1e-9):
            return f"expected {expected!r}{where}, got {got!r}"
        return None
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"expected a {type(expected).__name__}{where}, got {_kind(got)}"
        if len(got) != len(expected):
            return f"expected a {type(expected).__name__} of length {len(expected)}{where}, got length {len(got)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            problem = describe_mismatch(e, g, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"expected a dict{where}, got {_kind(got)}"
        missing = [k for k in expected if k not in got]
        if missing:
            return f"missing key {missing[0]!r}{where}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
        extra = [k for k in got if k not in expected]
        if extra:
            return f"unexpected key {extra[0]!r}{where}" + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else "")
        for key in expected:
            problem = describe_mismatch(expected[key], got[key], f"{where}[{key!r}]")
            if problem:
                return problem
        return None
    if got != expected:
        return f"expected {expected!r}{where}, got {got!r}"[:300]
    return None
