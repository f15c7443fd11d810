"""Compare an expected value with a student's, and describe the first difference in words.

Handles tensors, NumPy arrays, numbers (Python, NumPy, 0-d tensors, ``Fraction``), strings, and
lists, tuples and dicts of those. ``describe_mismatch(1.0, 1.0)`` -> ``None``;
``describe_mismatch([1, 2], [1])`` -> ``'expected a list of length 2, got length 1'``. NaNs in the
same places count as equal. ``tol=(rtol, atol)`` sets the tolerance (a check passes its exercise's
teaching tolerance); without it each dtype's tolerance from ``course_utils.tolerances`` is used.
A difference is always printed with enough digits to see it, with the largest absolute and
relative error, so a message never shows two values that print the same; a whole number expected and
got prints as an integer with the difference (``expected 1,181,184, got 1,179,648 (1,536 fewer; ...)``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from course_utils.tolerances import tolerance

_NUMBER = (int, float, np.integer, np.floating, Fraction)


def distinct_digits(expected: float, got: float) -> tuple[str, str]:
    """Both values with the fewest significant digits (at least 6) that tell them apart.

    ``distinct_digits(0.6118232, 0.6118233)`` -> ``('0.6118232', '0.6118233')``.
    """
    for digits in range(6, 18):
        a, b = f"{expected:.{digits}g}", f"{got:.{digits}g}"
        if a != b:
            return a, b
    return repr(float(expected)), repr(float(got))


def _errors(expected: float, got: float) -> str:
    abs_err = abs(got - expected)
    rel = abs_err / abs(expected) if expected != 0 else math.inf
    rel_text = f"{rel:.2g}" if math.isfinite(rel) else "inf (expected 0)"
    return f"absolute error {abs_err:.2g}, relative error {rel_text}"


def _allowed(tol: tuple[float, float]) -> str:
    return f"the check allows rtol {tol[0]:g}, atol {tol[1]:g}"


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "a tensor"
    if isinstance(value, np.ndarray):
        return "a NumPy array"
    return f"a {type(value).__name__}"


def _compare_tensors(expected: torch.Tensor, got: torch.Tensor, where: str, tol) -> str | None:
    if tuple(got.shape) != tuple(expected.shape):
        return f"expected shape {tuple(expected.shape)}{where}, got {tuple(got.shape)}"
    if expected.is_floating_point() or expected.is_complex():
        if not (got.is_floating_point() or got.is_complex()):
            return f"expected a floating-point tensor{where}, got dtype {got.dtype}"
        rtol, atol = tol if tol is not None else tolerance(expected.dtype, expected.device)
        exp64 = expected.detach().cpu().to(torch.float64)
        got64 = got.detach().cpu().to(torch.float64)
        if torch.isnan(got64).any() and not torch.isnan(exp64).any():
            return f"your result contains NaN{where}"
        if torch.isinf(got64).any() and not torch.isinf(exp64).any():
            return f"your result contains inf{where}"
        not_inf = torch.isinf(exp64) & (got64 != exp64)  # a mask's -inf entries: no "error of 1.8e+308"
        if not_inf.any():
            first = tuple(int(i) for i in not_inf.nonzero()[0])
            return (f"expected {exp64[first].item()} at index {first}{where}, got {got64[first].item():.6g} "
                    f"({int(not_inf.sum())} of the {int(torch.isinf(exp64).sum())} infinite entries differ)")
        if not torch.allclose(got64, exp64, rtol=rtol, atol=atol, equal_nan=True):
            diff = (got64 - exp64).abs().nan_to_num(0.0)
            index = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
            rel = (diff / exp64.abs()).nan_to_num(0.0, posinf=0.0)
            e, g = distinct_digits(exp64[index].item(), got64[index].item())
            return (
                f"values differ from the reference{where}: at index {index} expected {e}, got {g} "
                f"(largest absolute error {diff.max().item():.2g}, largest relative error "
                f"{rel.max().item():.2g}; {_allowed((rtol, atol))})"
            )
        return None
    if got.dtype != expected.dtype and got.is_floating_point():
        if (
            expected.dtype != torch.bool
            and torch.equal(got.cpu(), got.cpu().round())
            and torch.equal(got.cpu().to(expected.dtype), expected.cpu())
        ):
            return None  # whole numbers stored as floats (a float one-hot, float counts) are the same answer
        return f"expected dtype {expected.dtype}{where}, got {got.dtype}"
    if not torch.equal(got.cpu().to(expected.dtype), expected.cpu()):
        bad = (got.cpu().to(expected.dtype) != expected.cpu()).nonzero()[0].tolist()
        return f"values differ from the reference{where}: first at index {tuple(bad)}"
    return None


def _as_tensor(got: Any) -> Any:
    """NumPy arrays and plain numbers become tensors, so they can be compared with a tensor."""
    if isinstance(got, np.ndarray):
        return torch.from_numpy(got)
    if isinstance(got, (np.integer, np.floating)):
        return torch.tensor(got.item())
    if isinstance(got, Fraction):
        return torch.tensor(float(got), dtype=torch.float64)
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        return torch.tensor(got, dtype=torch.float64 if isinstance(got, float) else torch.int64)
    return got


def _compare_numbers(expected, got, where: str, tol) -> str | None:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()  # a 0-d tensor is a number
    elif isinstance(got, np.ndarray) and got.size == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, _NUMBER):
        return f"expected a number{where}, got {_kind(got)}"
    if isinstance(expected, (int, np.integer)) and not isinstance(got, (int, np.integer)):
        if not float(got).is_integer():
            return f"expected the whole number {expected}{where}, got {got!r}"
    e, g = float(expected), float(got)
    if math.isnan(e) and math.isnan(g):
        return None
    rtol, atol = tol if tol is not None else (1e-6, 1e-9)
    if not math.isclose(g, e, rel_tol=rtol, abs_tol=atol) and not (rtol == atol == 0 and g == e):
        if isinstance(expected, (int, np.integer)) and math.isfinite(g) and g.is_integer():
            whole_e, whole_g = int(expected), int(got)  # counts: every digit, and by how much they differ
            more = f"{abs(whole_g - whole_e):,} {'more' if whole_g > whole_e else 'fewer'}"
            return f"expected {whole_e:,}{where}, got {whole_g:,} ({more}; {_allowed((rtol, atol))})"
        shown_e, shown_g = distinct_digits(e, g)
        return f"expected {shown_e}{where}, got {shown_g} ({_errors(e, g)}; {_allowed((rtol, atol))})"
    return None


def describe_mismatch(expected: Any, got: Any, where: str = "", tol=None) -> str | None:
    """``None`` when ``got`` matches ``expected`` (within ``tol`` or the dtype's tolerance), else what differs."""
    if isinstance(expected, torch.Tensor):
        got = _as_tensor(got)
        if not isinstance(got, torch.Tensor):
            return f"expected a tensor{where}, got {_kind(got)}"
        if got.ndim == 0 and expected.numel() == 1:
            got = got.reshape(expected.shape)  # a number for a one-element tensor
        return _compare_tensors(expected, got, where, tol)
    if isinstance(expected, np.ndarray):
        got = _as_tensor(got)
        if not isinstance(got, torch.Tensor):
            return f"expected an array{where}, got {_kind(got)}"
        return _compare_tensors(torch.from_numpy(expected), got, where, tol)
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        if type(got) is not type(expected) or got != expected:
            return f"expected {expected!r}{where}, got {got!r}"[:300]
        return None
    if isinstance(expected, _NUMBER):
        return _compare_numbers(expected, got, where, tol)
    if isinstance(expected, (list, tuple)):
        if isinstance(got, (torch.Tensor, np.ndarray)) and got.ndim >= 1:
            got = got.tolist()  # a tensor of numbers where a list is expected is the same answer
        if not isinstance(got, (list, tuple)):
            return f"expected a {type(expected).__name__}{where}, got {_kind(got)}"
        if len(got) != len(expected):
            return f"expected a {type(expected).__name__} of length {len(expected)}{where}, got length {len(got)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            problem = describe_mismatch(e, g, f"{where}[{i}]", tol)
            if problem:
                return problem
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"expected a dict{where}, got {_kind(got)}"
        missing = [k for k in expected if k not in got]
        if missing:
            return f"missing key {missing[0]!r}{where}" + (
                f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            )
        extra = [k for k in got if k not in expected]
        if extra:
            return f"unexpected key {extra[0]!r}{where}" + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else "")
        for key in expected:
            problem = describe_mismatch(expected[key], got[key], f"{where}[{key!r}]", tol)
            if problem:
                return problem
        return None
    if got != expected:
        return f"expected {expected!r}{where}, got {got!r}"[:300]
    return None
