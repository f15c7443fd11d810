"""Inputs shared by the notebook-03 exercises: the worked example and seeded random queries, keys, values."""

from __future__ import annotations

import torch

from course_utils.checks.core import Case
from course_utils.checks.shared import keyed_uniform


def qkv_cases(seed: int, with_v: bool) -> list[Case]:
    """The worked example of the notebook, then two seeded cases (one batched, in float32)."""
    gen = torch.Generator().manual_seed(seed)

    def make(*shape, dtype=torch.float64):
        return torch.randn(*shape, generator=gen, dtype=dtype)

    worked_q = torch.tensor([[2.0, 0.0], [0.0, 4.0], [2.0, 2.0]], dtype=torch.float64)  # the / cat / sat
    worked_k = torch.tensor([[0.0, 2.0], [4.0, 0.0], [2.0, 2.0]], dtype=torch.float64)
    worked_v = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=torch.float64)
    if seed:  # hidden: every entry moved by up to ±0.5 (keyed by the grader's secret)
        worked_q, worked_k, worked_v = (t + keyed_uniform(seed, -0.5, 0.5, t.shape, stream=i)
                                        for i, t in enumerate((worked_q, worked_k, worked_v)))
    cases = [
        ("the / cat / sat worked example (d_k = 2)", worked_q, worked_k, worked_v),
        ("4 queries, 6 keys, d_head = 8", make(4, 8), make(6, 8), make(6, 3)),
        (
            "batch 2, 3 heads, 5 queries, 7 keys, d_head = 16 (float32)",
            make(2, 3, 5, 16, dtype=torch.float32),
            make(2, 3, 7, 16, dtype=torch.float32),
            make(2, 3, 7, 4, dtype=torch.float32),
        ),
    ]
    return [Case(label, (q, k, v) if with_v else (q, k)) for label, q, k, v in cases]
