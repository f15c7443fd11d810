"""Exercise ``patched_logits(model, tokens, clean_streams, layer, position)``: activation patching of one stream.

Required form (stated in the notebook): run the course ``GPT`` on ``tokens`` (the corrupted prompt, (batch, pos)),
but replace the residual stream ENTERING block ``layer`` at ``position``, for every row, by the clean run's
stream there, ``clean_streams[layer][:, position]`` (``clean_streams``: (n_layers + 1, batch, pos, d_model), as
``interp.residual_stream`` returns; ``layer`` = n_layers means the final stream, before ``ln_final``), and return
the logits (batch, pos, d_vocab). Checked against ``course_utils.interp.run_with_patches``.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.inside_the_model._cases import tiny_gpt, tiny_tokens
from course_utils.interp.logit_lens import residual_stream
from course_utils.interp.patching import run_with_patches


@torch.no_grad()
def patched_logits(model, tokens, clean_streams, layer, position):
    """Reference: ``run_with_patches`` with the clean streams as its cache."""
    heads = torch.zeros(model.cfg.n_layers, tokens.shape[0], model.cfg.n_heads, tokens.shape[1], model.cfg.d_model)
    cache = {"resid": clean_streams, "heads": heads}  # no head is patched: their cached outputs are never read
    return run_with_patches(model, tokens, cache, resid=[(layer, position)])[0]


def _patch_cases(seed: int) -> list[Case]:
    found = []
    for n_layers, batch, pos, layer, position in ((2, 2, 7, 1, 3), (3, 1, 9, 0, 5), (2, 3, 6, 2, 4),
                                                  (3, 2, 8, 2, 0)):
        model = tiny_gpt(seed + n_layers, n_layers=n_layers)
        clean = tiny_tokens(seed + layer, batch, pos)
        corrupted = tiny_tokens(seed + 7 + position, batch, pos)
        where = "the final stream" if layer == n_layers else f"the stream entering block {layer}"
        found.append(Case(f"{n_layers} layers, {batch} × {pos} tokens, {where} at position {position}",
                          (model, corrupted, residual_stream(model, clean), layer, position)))
    return found


def _run(model, x, streams_from: int = 0):
    for block in model.blocks[streams_from:]:
        x = block(x)
    return model.unembed(x)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("patched after the block", "clean_streams[layer] is the stream ENTERING block layer (index 0 is the "
              "embedding): replace it before block layer runs, not after")
@torch.no_grad()
def _after(model, tokens, clean_streams, layer, position):
    x = model.embed(tokens)
    for i, block in enumerate(model.blocks):
        x = block(x)
        if i + 1 == min(layer + 1, model.cfg.n_layers):
            x = x.clone()
            x[:, position] = clean_streams[i + 1][:, position]
    return model.unembed(x)


@bank.mistake("every position patched", "replace only the one position: the other positions keep the corrupted run's "
              "stream")
@torch.no_grad()
def _all_positions(model, tokens, clean_streams, layer, position):
    return _run(model, clean_streams[layer].clone(), layer)


@bank.mistake("the later blocks skipped", "after the patch, run the remaining blocks (layer onwards) on the patched "
              "stream, then decode")
@torch.no_grad()
def _no_rest(model, tokens, clean_streams, layer, position):
    x = model.embed(tokens)
    for block in model.blocks[:layer]:
        x = block(x)
    x = x.clone()
    x[:, position] = clean_streams[layer][:, position]
    return model.unembed(x)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.where with a position mask")
@torch.no_grad()
def _where(model, tokens, clean_streams, layer, position):
    x = model.embed(tokens)
    at = (torch.arange(tokens.shape[1]) == position)[None, :, None]  # (1, pos, 1)
    for i in range(model.cfg.n_layers + 1):
        if i == layer:
            x = torch.where(at, clean_streams[i], x)
        if i < model.cfg.n_layers:
            x = model.blocks[i](x)
    return model.unembed(x)


@bank.alternative("a forward pre-hook on the block (or the final norm)")
@torch.no_grad()
def _hook(model, tokens, clean_streams, layer, position):
    def patch(module, args):
        x = args[0].clone()
        x[:, position] = clean_streams[layer][:, position]
        return (x,) + args[1:]

    target = model.ln_final if layer == model.cfg.n_layers else model.blocks[layer]
    handle = target.register_forward_pre_hook(patch)
    try:
        return model(tokens)
    finally:
        handle.remove()


@bank.alternative("slices and torch.cat")
@torch.no_grad()
def _cat(model, tokens, clean_streams, layer, position):
    x = model.embed(tokens)
    for block in model.blocks[:layer]:
        x = block(x)
    x = torch.cat([x[:, :position], clean_streams[layer][:, position:position + 1], x[:, position + 1:]], dim=1)
    return _run(model, x, layer)


PATCH_RESIDUAL = Exercise(
    name="patch_residual",
    reference=patched_logits,
    cases=_patch_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    function_name="patched_logits",
    hints=[
        "Run the model by hand on the corrupted tokens, block by block, as in the logit lens. At one moment, just "
        "before block `layer` (or before decoding, when layer is n_layers), swap one position of the stream.",
        "Clone the stream first, then overwrite that one position, in every row, with the clean run's vector for the "
        "same layer and position; carry on with the remaining blocks and decode with model.unembed.",
    ],
)
EXERCISES = {PATCH_RESIDUAL.name: PATCH_RESIDUAL}


def check_patch_residual(fn):
    """Check a student's ``patched_logits(model, tokens, clean_streams, layer, position)``."""
    return PATCH_RESIDUAL.check(fn)
