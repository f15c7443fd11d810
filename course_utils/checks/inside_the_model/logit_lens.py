"""Exercise ``logit_lens(model, tokens)``: the residual stream after every block, decoded as if it were the last.

Required form (stated in the notebook): for a course ``GPT`` (pre-norm) and ``tokens`` (batch, pos), a tensor
(n_layers + 1, batch, pos, d_vocab): index 0 the embedding's stream (token plus position), index i + 1 the
stream after block i, each through the model's final LayerNorm ``ln_final`` and its unembedding
(``model.unembedding()``), so the last entry equals ``model(tokens)``. Checked against
``course_utils.interp.lens_logits``.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.inside_the_model._cases import tiny_gpt, tiny_tokens
from course_utils.interp.logit_lens import lens_logits


def logit_lens(model, tokens):
    """Reference: ``interp.lens_logits``."""
    return lens_logits(model, tokens)


def _lens_cases(seed: int) -> list[Case]:
    return [
        Case("a 2-layer GPT, 2 sequences of 7 tokens", (tiny_gpt(seed), tiny_tokens(seed, 2, 7))),
        Case("a 3-layer GPT with tied embeddings, one full context of 10",
             (tiny_gpt(seed, n_layers=3, tie_embeddings=True), tiny_tokens(seed + 1, 1, 10))),
    ]


def _streams(model, tokens) -> list:
    x = model.embed(tokens)
    found = [x]
    for block in model.blocks:
        x = block(x)
        found.append(x)
    return found


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no final LayerNorm", "the unembedding reads the stream after the final LayerNorm: pass each stream "
              "through model.ln_final before multiplying by the unembedding")
@torch.no_grad()
def _no_norm(model, tokens):
    return torch.stack([x @ model.unembedding() for x in _streams(model, tokens)])


@bank.mistake("a plain normalisation", "use the model's own final LayerNorm, with its learned gain and bias "
              "(model.ln_final), not a normalisation without them")
@torch.no_grad()
def _plain_norm(model, tokens):
    d = model.cfg.d_model
    return torch.stack([F.layer_norm(x, (d,), eps=model.ln_final.eps) @ model.unembedding()
                        for x in _streams(model, tokens)])


@bank.mistake("the embedding left out", "start with the stream before any block (the embedding, index 0), then one "
              "entry after each block: n_layers + 1 in all")
@torch.no_grad()
def _no_embedding(model, tokens):
    return torch.stack([model.unembed(x) for x in _streams(model, tokens)[1:]])


@bank.mistake("no position embedding", "the stream starts as the token embedding PLUS the position embedding "
              "(model.embed does both)")
@torch.no_grad()
def _no_positions(model, tokens):
    x = model.W_E[tokens]
    found = [model.unembed(x)]
    for block in model.blocks:
        x = block(x)
        found.append(model.unembed(x))
    return torch.stack(found)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("model.unembed on the stacked streams")
@torch.no_grad()
def _stacked(model, tokens):
    return model.unembed(torch.stack(_streams(model, tokens)))


@bank.alternative("F.layer_norm with ln_final's weights, then W_U by einsum")
@torch.no_grad()
def _einsum(model, tokens):
    ln = model.ln_final
    outs = [torch.einsum("bpd,dv->bpv", F.layer_norm(x, (ln.d_model,), ln.w, ln.b, ln.eps), model.unembedding())
            for x in _streams(model, tokens)]
    return torch.stack(outs)


@bank.alternative("forward hooks on the blocks")
@torch.no_grad()
def _hooks(model, tokens):
    seen = []
    handles = [b.register_forward_hook(lambda mod, args, out: seen.append(out)) for b in model.blocks]
    try:
        model(tokens)
    finally:
        for h in handles:
            h.remove()
    return torch.stack([model.unembed(x) for x in [model.embed(tokens)] + seen])


@bank.alternative("in float64, cast back")
@torch.no_grad()
def _float64(model, tokens):
    wide = copy.deepcopy(model).double()
    return torch.stack([wide.unembed(x) for x in _streams(wide, tokens)]).float()


LOGIT_LENS = Exercise(
    name="logit_lens",
    reference=logit_lens,
    cases=_lens_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Run the model by hand: the embedding first, then each block in turn, and keep the stream after each step "
        "(n_layers + 1 streams). Then decode every one of them the way the model decodes its last.",
        "Decoding is the model's final LayerNorm, then the unembedding matrix: model.unembed does both. Stack the "
        "decoded streams on a new first axis.",
    ],
)
EXERCISES = {LOGIT_LENS.name: LOGIT_LENS}


def check_logit_lens(fn):
    """Check a student's ``logit_lens(model, tokens)``."""
    return LOGIT_LENS.check(fn)
