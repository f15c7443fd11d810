"""The one table of numerical tolerances used by checks and tests.

Keyed by dtype and device type, so a looser GPU or Apple-silicon tolerance is changed here once
rather than in scattered tests. ``tolerance(torch.float32)`` -> ``(1e-5, 1e-6)`` as (rtol, atol).

Two tables: ``TOLERANCES`` says how closely two *implementations* of the same computation agree
(tests of the library against its oracles), and ``TEACHING_TOLERANCES`` says how closely a student's
answer must match the reference for a check to accept it, by the precision the exercise teaches.
A check judges at ``"float32"`` unless its exercise says otherwise: an answer that is right to
float32 rounding passes whatever the inputs' dtype, while every wrong formula in a mistake bank is
off by far more (``tests/test_checks.py`` proves both for every exercise).
"""

from __future__ import annotations

import torch

# (rtol, atol) per (dtype, device type); "any" is the fallback device.
TOLERANCES: dict[tuple[torch.dtype, str], tuple[float, float]] = {
    (torch.float64, "any"): (1e-9, 1e-12),
    (torch.float32, "any"): (1e-5, 1e-6),
    (torch.float32, "cuda"): (1e-4, 1e-5),  # TF32 and different reduction orders
    (torch.float32, "mps"): (1e-4, 1e-5),
    (torch.float16, "any"): (1e-3, 1e-3),
    (torch.bfloat16, "any"): (1.6e-2, 1e-2),
}


def tolerance(dtype: torch.dtype, device: str | torch.device = "cpu") -> tuple[float, float]:
    """(rtol, atol) for comparing tensors of ``dtype`` computed on ``device``."""
    kind = torch.device(device).type
    for key in ((dtype, kind), (dtype, "any")):
        if key in TOLERANCES:
            return TOLERANCES[key]
    return TOLERANCES[(torch.float32, "any")]


# (rtol, atol) a check allows, by the precision the exercise asks for.
TEACHING_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9),  # exercises about float64 itself (rare)
    "float32": (1e-5, 1e-5),  # the default: float32 rounding, another order of operations, einsum vs matmul
    "loose": (1e-3, 1e-4),  # long float32 chains (a training step, a full forward pass)
    "exact": (0.0, 0.0),  # integers, token ids, merges: no rounding at all
}


def teaching_tolerance(precision: str = "float32") -> tuple[float, float]:
    """(rtol, atol) a check allows at ``precision``: ``teaching_tolerance("float32")`` -> ``(1e-5, 1e-5)``."""
    if precision not in TEACHING_TOLERANCES:
        raise ValueError(f"precision must be one of {sorted(TEACHING_TOLERANCES)}, got {precision!r}")
    return TEACHING_TOLERANCES[precision]


def format_up_to_rounding(value: float, floor: float = 1e-6, spec: str = ".2e") -> str:
    """How a notebook prints a number that may be zero up to rounding: never the rounding noise itself.

    ``format_up_to_rounding(3.3e-07)`` -> ``'0 up to rounding (< 1e-6)'``;
    ``format_up_to_rounding(3.12)`` -> ``'3.12e+00'``. The noise below ``floor`` differs between
    processors, thread counts and devices, so a stored output that printed it could not be reproduced.
    """
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise TypeError(f"value must be a real number (a float or a one-element tensor), got {value!r}")
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 < floor < float("inf"):
        raise ValueError(f"floor must be a positive finite number, got {floor!r}")
    if abs(value) < floor:
        return f"0 up to rounding (< {floor:.0e})".replace("e-0", "e-")
    return format(value, spec)
