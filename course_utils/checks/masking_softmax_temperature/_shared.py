"""What several notebook-04 exercises share: the worked example's logits and the no-NaN property."""

from __future__ import annotations

import torch

from course_utils.checks.core import Case

F64 = torch.float64
WORKED_LOGITS = torch.tensor([6.2, 4.9, 2.1, 1.0])  # CAT, DOG, IS, LOVELY


def no_nan(case: Case, out) -> bool:
    """The property "no NaN": ``out`` is a tensor without a single NaN."""
    return isinstance(out, torch.Tensor) and not torch.isnan(out).any()
