"""Exercise ``SmallGPT`` (of the student's ``TransformerBlock``s): the student's GPT, checked with the course's weights.

Required form (stated in the notebook): ``SmallGPT(cfg)`` for a ``GPTConfig`` holds exactly the
state-dict keys of ``course_utils.gpt.model.GPT(cfg)`` (``W_E``, ``W_pos``, ``blocks.i.ln1.w`` ...,
``ln_final.w``, ``ln_final.b`` and ``W_U`` unless ``cfg.tie_embeddings``, when the unembedding is
``W_E``ᵀ), keeps ``cfg`` as ``self.cfg``, and ``forward(tokens, cache=None)`` maps (batch, pos) ids to (batch,
pos, d_vocab) logits; given a cache (one ``layer_cache.LayerCache`` per block, ``new_cache(n_layers)``), the
tokens are the positions after the cached ones (their position embeddings too). The check loads a seeded course
model's state dict into it (tied and untied) and compares logits with ``layer_cache.CachedGPT``'s, whole and fed
in pieces with one cache; that state dict is also what lets it load GPT-2 small.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import tiny_model
from course_utils.checks.build_gpt._classes import course_state, run_class
from course_utils.checks.weights import compare_or_convention
from course_utils.gpt.layer_cache import CachedBlock, CachedGPT
from course_utils.gpt.model import GPT
from course_utils.layernorm import LayerNorm


def _case(label: str, model: GPT, tokens: torch.Tensor, *pieces: int) -> Case:
    if not pieces:
        return Case(label, (model.cfg, course_state(model), tokens))
    return Case(label, (model.cfg, course_state(model), tokens, pieces, model.cfg.n_layers))


def _gpt_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    tied, untied = tiny_model(seed), tiny_model(seed, tie_embeddings=False)
    return [
        _case("2 layers, tied embeddings, 2 sequences of 7 tokens", tied, torch.randint(0, 23, (2, 7), generator=gen)),
        _case("untied W_U, a full context of 12 tokens", untied, torch.randint(0, 23, (1, 12), generator=gen)),
        _case("with a cache (new_cache(2)): 2 sequences of 11 tokens fed as 6, then 1, then 4 (the logits joined)",
              untied, torch.randint(0, 23, (2, 11), generator=gen), 6, 1, 4),
        _case("1 layer with a cache (new_cache(1)): 8 tokens fed as 5, then 3", tiny_model(seed, n_layers=1),
              torch.randint(0, 23, (1, 8), generator=gen), 5, 3),
    ]


class _Layout(nn.Module):
    """The course's parameters under the course's names; the mistakes and alternatives write ``forward``."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.W_E = nn.Parameter(torch.zeros(cfg.d_vocab, cfg.d_model))
        self.W_pos = nn.Parameter(torch.zeros(cfg.n_ctx, cfg.d_model))
        self.blocks = nn.ModuleList(CachedBlock(cfg) for _ in range(cfg.n_layers))
        self.ln_final = LayerNorm(cfg.d_model, cfg.ln_eps)
        self.W_U = None if cfg.tie_embeddings else nn.Parameter(torch.zeros(cfg.d_model, cfg.d_vocab))

    def stream(self, tokens, cache=None, positions=True, restart=False):
        start = 0 if cache is None or restart else cache[0].length
        x = self.W_E[tokens] + (self.W_pos[start : start + tokens.shape[1]] if positions else 0)  # (batch, pos, d)
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache[i])
        return x

    def unembedding(self):
        return self.W_E.T if self.W_U is None else self.W_U


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no final LayerNorm", "normalise the stream with ln_final before the unembedding")
class _NoFinalNorm(_Layout):
    def forward(self, tokens, cache=None):
        return self.stream(tokens, cache) @ self.unembedding()


@bank.mistake("no positions", "add the position embeddings W_pos[:pos] to the token embeddings before the blocks")
class _NoPositions(_Layout):
    def forward(self, tokens, cache=None):
        return self.ln_final(self.stream(tokens, cache, positions=False)) @ self.unembedding()


@bank.mistake(
    "always tied",
    "when cfg.tie_embeddings is False the model has its own W_U (d_model, d_vocab): unembed with it, and with "
    "W_E transposed only when the embeddings are tied",
)
class _AlwaysTied(_Layout):
    def forward(self, tokens, cache=None):
        return self.ln_final(self.stream(tokens, cache)) @ self.W_E.T


@bank.mistake("only the last block", "run the blocks one after another, each reading the stream the one before wrote")
class _LastBlockOnly(_Layout):
    def forward(self, tokens, cache=None):
        start = 0 if cache is None else cache[-1].length
        x = self.W_E[tokens] + self.W_pos[start : start + tokens.shape[1]]
        return self.ln_final(self.blocks[-1](x, None if cache is None else cache[-1])) @ self.unembedding()


@bank.mistake(
    "positions restart with a cache",
    "with a cache the tokens come after cache[0].length positions: their position embeddings are the rows from "
    "there on (W_pos[start:]), not W_pos[:pos] again",
)
class _PositionsRestart(_Layout):
    def forward(self, tokens, cache=None):
        return self.ln_final(self.stream(tokens, cache, restart=True)) @ self.unembedding()


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.embedding, arange and F.layer_norm")
class _Functional(_Layout):
    def forward(self, tokens, cache=None):
        start = cache[0].length if cache else 0
        x = F.embedding(tokens, self.W_E) + F.embedding(torch.arange(start, start + tokens.shape[1]), self.W_pos)
        for block, layer in zip(self.blocks, cache or [None] * len(self.blocks)):
            x = block(x, layer)
        ln = self.ln_final
        return F.layer_norm(x, (x.shape[-1],), ln.w, ln.b, ln.eps) @ self.unembedding()


@bank.alternative("blocks in an nn.Sequential, einsum unembedding")
class _Sequential(_Layout):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.blocks = nn.Sequential(*(CachedBlock(cfg) for _ in range(cfg.n_layers)))  # same keys: blocks.0.ln1.w

    def forward(self, tokens, cache=None):
        if cache is None:
            x = self.blocks(self.W_E[tokens] + self.W_pos[: tokens.shape[1]])
        else:
            x = self.W_E[tokens] + self.W_pos[cache[0].length :][: tokens.shape[1]]
            for i, block in enumerate(self.blocks):
                x = block(x, cache[i])
        W_U = self.W_E if self.W_U is None else self.W_U.T  # (d_vocab, d_model)
        return torch.einsum("bpm,vm->bpv", self.ln_final(x), W_U)


@bank.alternative("the cache's length read from the last layer, the stream in float32")
class _Float32(_Layout):
    def forward(self, tokens, cache=None):
        start = cache[-1].length if cache is not None else 0
        x = (self.W_E[tokens] + self.W_pos[start : start + tokens.shape[1]]).float()
        for i, block in enumerate(self.blocks):
            x = block.float()(x, cache[i] if cache is not None else None)
        return self.ln_final.float()(x) @ self.unembedding().float()


SMALL_GPT = Exercise(
    name="gpt_forward",
    reference=CachedGPT,
    cases=_gpt_cases,
    run=run_class,
    compare=compare_or_convention("loose"),
    wants_class=True,
    function_name="SmallGPT",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Four stages: look the tokens up (and their positions), run the blocks in order, normalise, unembed. Each "
        "block is two residual additions, each of a sub-layer reading a normalised copy of the stream.",
        "Your embed_tokens does the first stage (with a cache, on W_pos from cache[0].length on); keep the blocks in "
        "an nn.ModuleList named blocks (names blocks.0.ln1.w ...), block i gets cache[i]; the unembedding is W_U, or "
        "W_E transposed when the config ties them.",
    ],
)
EXERCISES = {SMALL_GPT.name: SMALL_GPT}


def check_gpt_forward(cls):
    """Check a student's ``SmallGPT`` class (built with a GPTConfig, its ``forward(tokens, cache=None)``)."""
    return SMALL_GPT.check(cls)
