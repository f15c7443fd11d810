"""Exercise ``block_forward(block, x)``: one pre-norm transformer block's forward, causal.

Required form (stated in the notebook): ``block`` is a ``course_utils.gpt.model.Block``, ``x`` of shape
(batch, pos, d_model); use ``block.ln1``, ``block.attn`` (with ``mask=causal_mask(pos)``),
``block.ln2`` and ``block.mlp``, and return the new stream, shaped like ``x``.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.small_gpt._cases import tiny_model
from course_utils.gpt.fused import fused_attention, fused_mlp
from course_utils.masking import causal_mask


def block_forward(block, x):
    """Reference: pre-norm, causal. ``x + attn(ln1(x))``, then that plus ``mlp(ln2(that))``."""
    h = x + block.attn(block.ln1(x), mask=causal_mask(x.shape[1], device=x.device))
    return h + block.mlp(block.ln2(h))


def _block_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    block = tiny_model(seed).blocks[0]
    return [
        Case("one block, 2 sequences of 6 positions, d_model 16", (block, torch.randn(2, 6, 16, generator=gen))),
        Case(
            "the second block, 1 sequence of 9 positions",
            (tiny_model(seed).blocks[1], torch.randn(1, 9, 16, generator=gen)),
        ),
    ]


def _attn(block, x):
    return block.attn(x, mask=causal_mask(x.shape[1], device=x.device))


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no residual", "each sub-layer's output is ADDED to the stream it read: keep x + ...")
def block_no_residual(block, x):
    h = _attn(block, block.ln1(x))
    return block.mlp(block.ln2(h))


@bank.mistake(
    "post-norm",
    "this is post-norm (normalise after adding); the block here is pre-norm: normalise the input of each sub-layer",
)
def block_post_norm(block, x):
    h = block.ln1(x + _attn(block, x))
    return block.ln2(h + block.mlp(h))


@bank.mistake(
    "parallel sub-layers",
    "the MLP reads the stream after attention has written to it (ln2 of x + attention), not the block's input",
)
def block_parallel(block, x):
    return x + _attn(block, block.ln1(x)) + block.mlp(block.ln2(x))  # MLP reads x, not x + attention


@bank.mistake("no causal mask", "pass a causal mask to the attention: a position must not see later ones")
def block_no_mask(block, x):
    h = x + block.attn(block.ln1(x))
    return h + block.mlp(block.ln2(h))


@bank.mistake("one LayerNorm for both", "the MLP has its own LayerNorm, ln2")
def block_one_norm(block, x):
    h = x + _attn(block, block.ln1(x))
    return h + block.mlp(block.ln1(h))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("PyTorch's fused kernels")
def _block_fused(block, x):
    h = x + fused_attention(block.attn, block.ln1(x))
    return h + fused_mlp(block.mlp, block.ln2(h))


@bank.alternative("mask from tril")
def _block_tril(block, x):
    mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
    h = x + block.attn(block.ln1(x), mask=mask)
    return h + block.mlp(block.ln2(h))


@bank.alternative("in-place additions on a copy")
def _block_in_place(block, x):
    x = x.clone()
    x += _attn(block, block.ln1(x))
    x += block.mlp(block.ln2(x))
    return x


BLOCK_FORWARD = Exercise(
    name="block_forward",
    reference=block_forward,
    cases=_block_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two steps, the same shape each time: read the stream through a LayerNorm, "
        "run the sub-layer, add the result back.",
        "Attention gets the mask from causal_mask(pos); "
        "the second step starts from the stream the first step produced and uses ln2.",
    ],
)
EXERCISES = {BLOCK_FORWARD.name: BLOCK_FORWARD}


def check_block_forward(fn):
    """Check a student's ``block_forward(block, x)``."""
    return BLOCK_FORWARD.check(fn)
