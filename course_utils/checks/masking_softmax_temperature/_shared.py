"""What several notebook-04 exercises share beyond ``checks.shared``: the float64 shorthand."""

from __future__ import annotations

import torch

F64 = torch.float64
