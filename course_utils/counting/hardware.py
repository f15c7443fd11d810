"""Accelerators as the arithmetic of this course sees them: peak FLOP/s, memory bandwidth, memory.

Covers ``Accelerator`` (a name and three spec-sheet numbers, validated) with its ridge point
``flops_per_byte`` (peak FLOP/s over bytes/s: a kernel doing fewer FLOPs per byte it reads is
limited by memory bandwidth, one doing more by arithmetic, the roofline model's corner), and two
presets from NVIDIA's datasheets, dense 16-bit tensor-core peaks (the datasheets' headline figures
"with sparsity" are twice these):

- ``A100_80GB``: A100 SXM 80GB, 312 TFLOP/s bf16, 2,039 GB/s HBM2e -> about 153 FLOPs per byte;
- ``H100_SXM``: H100 SXM5 80GB, 989.4 TFLOP/s bf16, 3,350 GB/s HBM3 -> about 295 FLOPs per byte.

Leaves out: clocks, caches, interconnect, other precisions and whatever a real kernel reaches
(time estimates use a utilisation factor: ``course_utils.counting.training_time``).
"""

from __future__ import annotations

from dataclasses import dataclass

from course_utils.validate import positive_number


@dataclass(frozen=True)
class Accelerator:
    """One accelerator's peaks: ``Accelerator("x", 100e12, 1e12, 80e9).flops_per_byte`` -> 100.0."""

    name: str
    peak_flops: float  # dense 16-bit matrix FLOP/s
    memory_bandwidth: float  # bytes per second
    memory_bytes: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"Accelerator.name must be a str, got {type(self.name).__name__}")
        for field in ("peak_flops", "memory_bandwidth", "memory_bytes"):
            positive_number(f"Accelerator.{field}", getattr(self, field))

    @property
    def flops_per_byte(self) -> float:
        """The ridge point: FLOPs the accelerator can do in the time it reads one byte."""
        return self.peak_flops / self.memory_bandwidth


A100_80GB = Accelerator("A100 SXM 80GB", peak_flops=312e12, memory_bandwidth=2.039e12, memory_bytes=80e9)
H100_SXM = Accelerator("H100 SXM", peak_flops=989.4e12, memory_bandwidth=3.35e12, memory_bytes=80e9)
