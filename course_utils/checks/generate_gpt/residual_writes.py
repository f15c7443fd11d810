"""Exercise ``residual_writes(model, tokens)``: everything written into the residual stream of a pre-norm GPT.

Required form (stated in the notebook): for a course ``GPT`` and ``tokens`` (batch, pos), a dict with the keys
``"W_E"``, ``"W_pos"``, then ``"blocks.{i}.attn"`` and ``"blocks.{i}.mlp"`` for every block in order, each
(batch, pos, d_model): the token embeddings, the position embeddings (the same rows for every sequence),
and what each block's attention (causal, ``b_O`` included) and MLP add to the stream; their sum is the
stream that reaches ``ln_final``. The check compares with ``GPT.residual_writes``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import tiny_model
from course_utils.masking import causal_mask


@torch.no_grad()
def residual_writes(model, tokens):
    """Reference: ``GPT.residual_writes``."""
    return model.residual_writes(tokens)


def _writes_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("a tiny GPT (2 layers), 2 sequences of 9 tokens", (tiny_model(seed), torch.randint(0, 23, (2, 9),
                                                                                                 generator=gen))),
        Case("its own W_U, one full context of 12 tokens", (tiny_model(seed, tie_embeddings=False),
                                                            torch.randint(0, 23, (1, 12), generator=gen))),
    ]


bank = Bank()


def _embeddings(model, tokens) -> dict:
    batch, pos = tokens.shape
    return {"W_E": model.W_E[tokens], "W_pos": model.W_pos[:pos].expand(batch, pos, -1)}


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "the MLP reads the stream before attention's write",
    "within a block the MLP comes after attention: it reads ln2 of the stream with attention's write already "
    "added",
)
@torch.no_grad()
def writes_parallel(model, tokens):
    writes = _embeddings(model, tokens)
    x = writes["W_E"] + writes["W_pos"]
    for i, block in enumerate(model.blocks):
        attn = block.attn(block.ln1(x), mask=causal_mask(tokens.shape[1]))
        mlp = block.mlp(block.ln2(x))
        writes[f"blocks.{i}.attn"], writes[f"blocks.{i}.mlp"] = attn, mlp
        x = x + attn + mlp
    return writes


@bank.mistake(
    "the stream, not the write",
    "record what each sub-layer adds (its output), not the whole stream after the addition",
)
@torch.no_grad()
def writes_stream(model, tokens):
    writes = _embeddings(model, tokens)
    x = writes["W_E"] + writes["W_pos"]
    for i, block in enumerate(model.blocks):
        x = x + block.attn(block.ln1(x), mask=causal_mask(tokens.shape[1]))
        writes[f"blocks.{i}.attn"] = x
        x = x + block.mlp(block.ln2(x))
        writes[f"blocks.{i}.mlp"] = x
    return writes


@bank.mistake("no causal mask", "the model's attention is causal: call block.attn with mask=causal_mask(pos)")
@torch.no_grad()
def writes_unmasked(model, tokens):
    writes = _embeddings(model, tokens)
    x = writes["W_E"] + writes["W_pos"]
    for i, block in enumerate(model.blocks):
        writes[f"blocks.{i}.attn"] = block.attn(block.ln1(x))
        x = x + writes[f"blocks.{i}.attn"]
        writes[f"blocks.{i}.mlp"] = block.mlp(block.ln2(x))
        x = x + writes[f"blocks.{i}.mlp"]
    return writes


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("each write as the difference of the stream before and after")
@torch.no_grad()
def _writes_differences(model, tokens):
    writes = _embeddings(model, tokens)
    x = writes["W_E"] + writes["W_pos"]
    mask = causal_mask(tokens.shape[1])
    for i, block in enumerate(model.blocks):
        mid = x + block.attn(block.ln1(x), mask=mask)
        out = mid + block.mlp(block.ln2(mid))
        writes[f"blocks.{i}.attn"], writes[f"blocks.{i}.mlp"] = mid - x, out - mid
        x = out
    return writes


@bank.alternative("forward hooks on every attention and MLP, then one forward pass")
@torch.no_grad()
def _writes_hooks(model, tokens):
    writes = {"W_E": F.embedding(tokens, model.W_E), "W_pos": model.W_pos[None, : tokens.shape[1]].repeat(
        tokens.shape[0], 1, 1)}
    handles = []
    for i, block in enumerate(model.blocks):
        for part in ("attn", "mlp"):
            def keep(module, inputs, output, key=f"blocks.{i}.{part}"):
                writes[key] = output
            handles.append(getattr(block, part).register_forward_hook(keep))
    model(tokens)
    for handle in handles:
        handle.remove()
    return writes


@bank.alternative("a torch.tril mask, the blocks' sub-layers by index")
@torch.no_grad()
def _writes_tril(model, tokens):
    pos = tokens.shape[1]
    mask = torch.tril(torch.ones(pos, pos, dtype=torch.bool))
    writes = {"W_E": model.W_E[tokens], "W_pos": model.W_pos[:pos].unsqueeze(0).expand_as(model.W_E[tokens])}
    stream = writes["W_E"] + writes["W_pos"]
    for i in range(len(model.blocks)):
        block = model.blocks[i]
        a = block.attn(block.ln1(stream), mask=mask)
        m = block.mlp(block.ln2(stream + a))
        stream = stream + a + m
        writes[f"blocks.{i}.attn"] = a
        writes[f"blocks.{i}.mlp"] = m
    return writes


RESIDUAL_WRITES = Exercise(
    name="residual_writes",
    reference=residual_writes,
    cases=_writes_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Run the model's forward pass yourself, block by block, but keep every piece that is added to the stream "
        "before adding it.",
        "Start from W_E[tokens] and W_pos[:pos] (expanded to the batch). In each block, attention reads ln1 of the "
        "stream (with the causal mask) and the MLP reads ln2 of the stream after attention's write is added; keep "
        "both outputs under their keys, then add them.",
    ],
)
EXERCISES = {RESIDUAL_WRITES.name: RESIDUAL_WRITES}


def check_residual_writes(fn):
    """Check a student's ``residual_writes(model, tokens)``."""
    return RESIDUAL_WRITES.check(fn)
