"""Exercise ``LlamaBlock``: today's decoder block assembled from the notebook's RMSNorm, RotaryAttention and SwiGLU.

Required form (stated in the notebook): ``LlamaBlock(cfg)`` for a ``course_utils.llama.LlamaConfig``
holds ``norm1``, ``attn`` (``RotaryAttention(cfg.d_model, cfg.n_heads, cfg.kv_heads,
layout=cfg.rope_layout)``), ``norm2`` and ``mlp`` (``SwiGLU(cfg.d_model, cfg.mlp_width)``), the norms
with ``cfg.eps``; ``forward(x, past_k=None, past_v=None)`` -> ``(x_out, k_all, v_all)``, pre-norm:
``x + attn(norm1(x))``, then that plus ``mlp(norm2(that))``, the attention's cache passed through.
The check loads a seeded ``course_utils.llama.LlamaBlock``'s weights by name (``norm1.w``,
``attn.W_Q``, ..., ``mlp.W_gate``, ...), feeds sequences whole and in chunks with the cache, and
compares every position's output (and the cache's shapes) with the course block's ``forward_cached``.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.todays_block._modules import run_layer, seeded_state
from course_utils.checks.weights import compare_or_convention
from course_utils.llama.config import LlamaConfig
from course_utils.llama.model import LlamaBlock as CourseLlamaBlock

F64 = torch.float64


class LlamaBlock(CourseLlamaBlock):
    """The reference: the course's block, its cached path as ``forward``."""

    def forward(self, x, past_k=None, past_v=None):
        return self.forward_cached(x, past_k, past_v)


def _cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)

    def case(label, cfg, batch, chunks, offset):
        x = torch.randn(batch, sum(chunks), cfg.d_model, generator=gen, dtype=F64)
        return Case(label, ((cfg,), {}, seeded_state(LlamaBlock(cfg), seed + offset), x, chunks))

    small = dict(d_vocab=11, n_ctx=16, n_layers=1)
    return [
        case("d_model=32, 4 query heads, 2 key/value heads, halves, d_mlp from swiglu_width, 6 positions, batch 2",
             LlamaConfig(**small, d_model=32, n_heads=4, n_kv_heads=2), 2, (6,), 0),
        case("d_model=24, 6 heads, 3 key/value heads, interleaved, d_mlp=40, eps=0.1 (large, so that it shows): "
             "3 positions, then 1, then 2 with the cache",
             LlamaConfig(**small, d_model=24, n_heads=6, n_kv_heads=3, d_mlp=40, eps=0.1, rope_layout="interleaved"),
             1, (3, 1, 2), 100),
        case("d_model=16, 2 heads, 1 key/value head, halves, d_mlp=48: 2 positions, then 2, then 1",
             LlamaConfig(**small, d_model=16, n_heads=2, n_kv_heads=1, d_mlp=48), 2, (2, 2, 1), 200),
    ]  # fmt: skip


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "post-norm",
    "this is post-norm (normalise after adding); today's block is pre-norm: each sub-layer reads a normalised "
    "copy of the stream, and the stream itself is never normalised inside the block",
)
class _PostNorm(LlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        attn_out, k, v = self.attn.forward_cached(x, past_k, past_v)
        h = self.norm1(x + attn_out)
        return self.norm2(h + self.mlp(h)), k, v


@bank.mistake("one norm twice", "the MLP reads the stream through its own RMSNorm, norm2, with its own gain")
class _OneNorm(LlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        attn_out, k, v = self.attn.forward_cached(self.norm1(x), past_k, past_v)
        h = x + attn_out
        return h + self.mlp(self.norm1(h)), k, v


@bank.mistake("norms swapped", "norm1 comes before the attention and norm2 before the MLP")
class _NormsSwapped(LlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        attn_out, k, v = self.attn.forward_cached(self.norm2(x), past_k, past_v)
        h = x + attn_out
        return h + self.mlp(self.norm1(h)), k, v


@bank.mistake(
    "attention's residual missing",
    "the attention's output is ADDED to the stream it read (x + attn(norm1(x))), as the MLP's is",
)
class _NoAttentionResidual(LlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        h, k, v = self.attn.forward_cached(self.norm1(x), past_k, past_v)
        return h + self.mlp(self.norm2(h)), k, v


@bank.mistake("MLP's residual missing", "the MLP's output is ADDED to the stream it read: h + mlp(norm2(h))")
class _NoMLPResidual(LlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        attn_out, k, v = self.attn.forward_cached(self.norm1(x), past_k, past_v)
        return self.mlp(self.norm2(x + attn_out)), k, v


@bank.mistake(
    "cache not passed on", "hand past_k and past_v on to the attention: the new positions attend to the cached ones too"
)
class _CacheDropped(LlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        attn_out, k, v = self.attn.forward_cached(self.norm1(x))
        if past_k is not None:
            k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        h = x + attn_out
        return h + self.mlp(self.norm2(h)), k, v


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.rms_norm with the gains, the fused attention kernel")
class _Functional(LlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        d = (x.shape[-1],)
        attn_out, k, v = self.attn.forward_cached(F.rms_norm(x, d, self.norm1.w, self.norm1.eps), past_k, past_v,
                                                  impl="fused")  # fmt: skip
        h = x + attn_out
        return h + self.mlp(F.rms_norm(h, d, self.norm2.w, self.norm2.eps)), k, v


@bank.alternative("the two sub-layers in a loop, the cache kept aside")
class _Loop(LlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        cache = {}

        def attend(h):
            out, cache["k"], cache["v"] = self.attn.forward_cached(h, past_k, past_v)
            return out

        for norm, layer in ((self.norm1, attend), (self.norm2, self.mlp)):
            x = x + layer(norm(x))
        return x, cache["k"], cache["v"]


@bank.alternative("float32 arithmetic, RMSNorm and SwiGLU written out")
class _Float32(LlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        w = {name: t.float() for name, t in self.state_dict().items()}
        attn = copy.deepcopy(self.attn).float()

        def rms(h, gain, eps):
            return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * gain

        x = x.float()
        past = (None, None) if past_k is None else (past_k.float(), past_v.float())
        attn_out, k, v = attn.forward_cached(rms(x, w["norm1.w"], self.norm1.eps), *past)
        h = x + attn_out
        m = rms(h, w["norm2.w"], self.norm2.eps)
        return h + (F.silu(m @ w["mlp.W_gate"]) * (m @ w["mlp.W_in"])) @ w["mlp.W_out"], k, v


LLAMA_BLOCK = Exercise(
    name="llama_block",
    reference=LlamaBlock,
    cases=_cases,
    run=run_layer,
    compare=compare_or_convention(),
    wants_class=True,
    function_name="LlamaBlock",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "GPT-2's block from notebook 09 with its parts swapped: two residual additions, each adding a sub-layer's "
        "output to the stream it read, each sub-layer reading a normalised copy. The attention also hands back "
        "its cache; pass it in, and return it.",
        "Build the four parts with the config's sizes (cfg.kv_heads key/value heads, cfg.rope_layout, "
        "cfg.mlp_width, cfg.eps for both norms). In forward, call the attention on norm1(x) with the past keys "
        "and values, add its output to x, then add mlp(norm2(·)) of that sum.",
    ],
)
EXERCISES = {LLAMA_BLOCK.name: LLAMA_BLOCK}


def check_llama_block(cls):
    """Check a student's ``LlamaBlock`` class (built with a ``LlamaConfig``, ``forward(x, past_k, past_v)``)."""
    return LLAMA_BLOCK.check(cls)
