"""The one table of numerical tolerances used by checks and tests.

Keyed by dtype and device type, so a looser GPU or Apple-silicon tolerance is changed here once
rather than in scattered tests. ``tolerance(torch.float32)`` -> ``(1e-5, 1e-6)`` as (rtol, atol).
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
