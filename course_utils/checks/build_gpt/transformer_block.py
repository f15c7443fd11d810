"""Exercise ``TransformerBlock``: one pre-norm block, a class the student writes from their own sub-layers.

Required form (stated in the notebook): ``TransformerBlock(cfg)`` for a ``GPTConfig`` holds ``ln1``, ``attn``
(the student's ``CausalAttention``), ``ln2`` and ``mlp`` (their ``GeluMLP``), so its parameters carry the
names of ``course_utils.gpt.model.Block``'s (``ln1.w``, ``attn.W_Q``, ``mlp.W_in`` ...); ``forward(x,
cache=None)`` maps (batch, pos, d_model) to the same shape: ``x + attn(ln1(x))``, then that plus
``mlp(ln2(that))``, the layer's cache handed to the attention. The check loads a course block's weights into it
and compares with ``layer_cache.CachedBlock`` (``Block``'s maths), on whole sequences and fed in pieces with one
``LayerCache``. The attention and the MLP are the student's own, so this passes once theirs do.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import F64, tiny_model
from course_utils.checks.build_gpt._classes import course_state, run_class
from course_utils.checks.weights import compare_or_convention
from course_utils.gpt.layer_cache import CachedBlock


def _block_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    model = tiny_model(seed)
    x = lambda *shape: torch.randn(*shape, generator=gen, dtype=F64)  # noqa: E731
    return [
        Case("block 0's weights, 2 sequences of 6 positions, d_model 16",
             (model.cfg, course_state(model.blocks[0]), x(2, 6, 16))),
        Case("block 1's weights, 1 sequence of 9 positions", (model.cfg, course_state(model.blocks[1]), x(1, 9, 16))),
        Case("block 1's weights with a LayerCache: 8 positions fed as 3, then 1, then 4 (the outputs joined)",
             (model.cfg, course_state(model.blocks[1]), x(2, 8, 16), (3, 1, 4), None)),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no residual", "each sub-layer's output is ADDED to the stream it read: keep x + ...")
class _NoResidual(CachedBlock):
    def forward(self, x, cache=None):
        return self.mlp(self.ln2(self.attn(self.ln1(x), cache)))


@bank.mistake(
    "post-norm",
    "this is post-norm (normalise after adding); the block here is pre-norm: normalise the input of each sub-layer",
)
class _PostNorm(CachedBlock):
    def forward(self, x, cache=None):
        h = self.ln1(x + self.attn(x, cache))
        return self.ln2(h + self.mlp(h))


@bank.mistake(
    "parallel sub-layers",
    "the MLP reads the stream after attention has written to it (ln2 of x + attention), not the block's input",
)
class _Parallel(CachedBlock):
    def forward(self, x, cache=None):
        return x + self.attn(self.ln1(x), cache) + self.mlp(self.ln2(x))  # MLP reads x, not x + attention


@bank.mistake("one LayerNorm for both", "the MLP has its own LayerNorm, ln2")
class _OneNorm(CachedBlock):
    def forward(self, x, cache=None):
        h = x + self.attn(self.ln1(x), cache)
        return h + self.mlp(self.ln1(h))


@bank.mistake(
    "the cache not handed on",
    "pass the block's cache to its attention (self.attn(..., cache)): the attention is what keeps and reads the "
    "earlier positions' keys and values",
)
class _CacheDropped(CachedBlock):
    def forward(self, x, cache=None):
        h = x + self.attn(self.ln1(x))
        return h + self.mlp(self.ln2(h))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("in-place additions on a copy")
class _InPlace(CachedBlock):
    def forward(self, x, cache=None):
        x = x.clone()
        x += self.attn(self.ln1(x), cache=cache)
        x += self.mlp(self.ln2(x))
        return x


@bank.alternative("F.layer_norm with the LayerNorms' own parameters")
class _Functional(CachedBlock):
    def forward(self, x, cache=None):
        norm = lambda ln, h: F.layer_norm(h, (h.shape[-1],), ln.w, ln.b, ln.eps)  # noqa: E731
        h = x + self.attn(norm(self.ln1, x), cache)
        return h + self.mlp(norm(self.ln2, h))


@bank.alternative("the two sub-layers in a loop, attention's write kept apart")
class _Loop(CachedBlock):
    def forward(self, x, cache=None):
        attn_write = self.attn(self.ln1(x), cache)  # (batch, pos, d_model)
        for write in (attn_write, None):
            x = x + (write if write is not None else self.mlp(self.ln2(x)))
        return x


TRANSFORMER_BLOCK = Exercise(
    name="transformer_block",
    reference=CachedBlock,
    cases=_block_cases,
    run=run_class,
    compare=compare_or_convention(),
    wants_class=True,
    function_name="TransformerBlock",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two steps, the same shape each time: read the stream through a LayerNorm, run the sub-layer, add the result "
        "back. The attention is already causal, and it takes the cache.",
        "The second step starts from the stream the first step produced and uses ln2; hand the cache to self.attn and "
        "nothing else.",
    ],
)
EXERCISES = {TRANSFORMER_BLOCK.name: TRANSFORMER_BLOCK}


def check_transformer_block(cls):
    """Check a student's ``TransformerBlock`` class (built with a GPTConfig, its ``forward(x, cache=None)``)."""
    return TRANSFORMER_BLOCK.check(cls)
