"""The SwiGLU feed-forward's hidden width: why Llama's MLPs are about 8/3 · d_model wide.

The layer itself is ``course_utils.moe.SwiGLU`` (notebook 07's expert, the same three matrices:
``W_gate`` and ``W_in`` up, SiLU on the gate, ``W_out`` down; Meta's w1, w3, w2), so there is one
implementation for the dense MLP and the expert. This module covers the width: a GELU MLP of width
4·d_model holds 2 · d_model · 4·d_model = 8·d_model² weights; a SwiGLU MLP holds three matrices,
3 · d_model · d_mlp, which is the same 8·d_model² at d_mlp = 8/3 · d_model. Meta's code takes
int(2/3 · 4·d_model), optionally multiplies it (Llama 3: 1.3), and rounds up to a multiple that suits
the hardware's matrix tiles (64 here, 256 in Llama 2, 1024 in Llama 3).
Leaves out the layer (in ``moe.layer``) and mixtures of such layers (``moe``).
"""

from __future__ import annotations

from course_utils.validate import positive_int, positive_number


def swiglu_width(d_model: int, multiple_of: int = 64, multiplier: float = 1.0) -> int:
    """d_mlp = int(8/3 · d_model), times ``multiplier``, rounded up to a multiple of ``multiple_of``.

    ``swiglu_width(512)`` -> 1408 (int(1365.3) = 1365, rounded up to 22 · 64); Llama 2 7B
    ``swiglu_width(4096, 256)`` -> 11008; Llama 3 8B ``swiglu_width(4096, 1024, 1.3)`` -> 14336.
    """
    d_model, multiple_of = positive_int("d_model", d_model), positive_int("multiple_of", multiple_of)
    multiplier = positive_number("multiplier", multiplier)
    width = int(2 * (4 * d_model) / 3)  # Meta's order of operations: two thirds of the GELU MLP's 4·d_model
    if multiplier != 1.0:
        width = int(multiplier * width)
    return multiple_of * -(-width // multiple_of)  # round up
