"""Choosing where tensors live, and seeding every random generator in one visible call.

Covers: ``pick_device`` (CUDA, then Apple MPS, then CPU, or the ``COURSE_DEVICE`` environment
variable) and ``seed_everything``. Library code never calls these by itself: a notebook cell does,
so the choice is visible. Leaves out multi-GPU placement.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from course_utils.validate import integer

ENV_VAR = "COURSE_DEVICE"
_KNOWN = ("cpu", "cuda", "mps")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def pick_device(preferred: str | None = None) -> torch.device:
    """Return the device the course should use: ``pick_device()`` -> ``device(type='cpu')`` on a laptop.

    Order: the ``preferred`` argument, else ``$COURSE_DEVICE``, else CUDA, then MPS, then CPU.
    An explicit request for a device that is not present raises ``ValueError``.
    """
    choice = preferred if preferred is not None else os.environ.get(ENV_VAR, "").strip()
    if choice:
        if not isinstance(choice, str):
            raise TypeError(f"preferred must be a string such as 'cpu' or 'cuda', got {type(choice).__name__}")
        kind = choice.split(":", 1)[0].lower()
        if kind not in _KNOWN:
            raise ValueError(f"{ENV_VAR}/preferred must be one of {_KNOWN} (optionally 'cuda:N'), got {choice!r}")
        if kind == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {choice!r} was requested but CUDA is not available on this machine")
        if kind == "mps" and not _mps_available():
            raise ValueError(f"device {choice!r} was requested but Apple MPS is not available on this machine")
        return torch.device(choice.lower())
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and torch (every device); ``seed_everything(0)`` -> a torch.Generator seeded with 0.

    Returns a fresh CPU ``torch.Generator`` seeded the same way, for code that prefers an explicit one.
    """
    integer("seed", seed)
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    generator = torch.Generator().manual_seed(seed)
    return generator


def describe_device(device: torch.device) -> str:
    """A one-line description: ``describe_device(torch.device('cpu'))`` -> ``'cpu (4 threads)'``."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    if device.type == "mps":
        return "mps (Apple GPU)"
    return f"cpu ({torch.get_num_threads()} threads)"
