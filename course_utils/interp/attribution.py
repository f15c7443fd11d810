"""Direct logit attribution: which parts of the model write a logit difference straight into the final stream.

A pre-norm ``GPT``'s final stream is a sum of writes: the embedding (token plus position), each attention
head's output through its own ``W_O[h]``, each layer's attention bias ``b_O`` and each MLP's output. The
readout is ``ln_final(x) @ W_U``; LayerNorm is not linear, so it is *treated as linear with its scale frozen*:
the scale ``sqrt(var(x) + eps)`` is taken from the full forward pass, and each write ``c`` is read as
``((c - mean(c)) / scale) * w @ (W_U[:, A] - W_U[:, B])``. The centring is linear, so with the scale fixed
the parts plus the final norm's bias term ``b @ (W_U[:, A] - W_U[:, B])`` add up exactly (up to rounding) to
the model's logit difference ``logit_A - logit_B`` at that position.

Covers ``component_writes`` (every write, per position) and ``direct_logit_attribution`` (the parts at one
position). A part is a *direct* effect only: what the write does through the unembedding, not what later
layers make of it, and the frozen scale hides how removing a write would rescale everything else. Work in
float64 (``model.double()``) when the parts must add up to the last digit.
Leaves out path patching (``patching`` patches whole activations) and attribution through MLP neurons.
"""

from __future__ import annotations

import torch
from jaxtyping import Int
from torch import Tensor

from course_utils.gpt.config import check_tokens
from course_utils.gpt.model import GPT
from course_utils.interp.logit_lens import check_gpt, check_position, check_token_ids
from course_utils.masking import causal_mask


@torch.no_grad()
def component_writes(model: GPT, tokens: Int[Tensor, "batch pos"]) -> dict[str, Tensor]:
    """Everything written into the residual stream, split finer than ``GPT.residual_writes``:

    ``{"embed": (batch, pos, d_model), "heads": (layer, batch, head, pos, d_model), "attn_bias": (layer, d_model),
    "mlps": (layer, batch, pos, d_model)}``; their sum is the final stream (``attn_bias`` is zero without biases).
    """
    check_gpt(model)
    tokens = check_tokens(tokens, model.cfg)
    x = model.embed(tokens)  # (batch, pos, d_model)
    found = {"embed": x, "heads": [], "attn_bias": [], "mlps": []}
    mask = causal_mask(tokens.shape[1], device=tokens.device)
    for block in model.blocks:
        heads = block.attn.per_head_contributions(block.ln1(x), mask)  # (batch, head, pos, d_model)
        bias = torch.zeros_like(x[0, 0]) if block.attn.b_O is None else block.attn.b_O  # (d_model,)
        attn_out = heads.sum(1) + bias
        mlp_out = block.mlp(block.ln2(x + attn_out))
        x = x + attn_out + mlp_out
        found["heads"].append(heads)
        found["attn_bias"].append(bias)
        found["mlps"].append(mlp_out)
    return {k: v if k == "embed" else torch.stack(v) for k, v in found.items()}


@torch.no_grad()
def direct_logit_attribution(
    model: GPT, tokens: Int[Tensor, "batch pos"], position: int, token_a, token_b
) -> dict[str, Tensor]:
    """Split ``logit[token_a] - logit[token_b]`` at ``position`` into the writes' direct parts.

    ``token_a``, ``token_b``: ints or (batch,) tensors of token ids. Returns ``"embed"`` (batch,),
    ``"heads"`` (batch, layer, head), ``"attn_bias"`` (batch, layer), ``"mlps"`` (batch, layer), ``"ln_bias"``
    (batch,) (the final norm's bias term), ``"total"`` (batch,) (the sum of all parts), ``"logit_diff"``
    (batch,) (the difference in ``model(tokens)``, to compare) and ``"scale"`` (batch,) (the frozen LayerNorm scale).
    """
    check_gpt(model)
    tokens = check_tokens(tokens, model.cfg)
    position = check_position(position, tokens.shape[1])
    batch, d_vocab = tokens.shape[0], model.cfg.d_vocab
    a = check_token_ids("token_a", token_a, batch, d_vocab).to(tokens.device)
    b = check_token_ids("token_b", token_b, batch, d_vocab).to(tokens.device)
    writes = component_writes(model, tokens)
    embed = writes["embed"][:, position]  # (batch, d_model)
    heads = writes["heads"][:, :, :, position].permute(1, 0, 2, 3)  # (batch, layer, head, d_model)
    attn_bias = writes["attn_bias"][None].expand(batch, -1, -1)  # (batch, layer, d_model)
    mlps = writes["mlps"][:, :, position].transpose(0, 1)  # (batch, layer, d_model)
    final = embed + heads.sum((1, 2)) + attn_bias.sum(1) + mlps.sum(1)  # (batch, d_model)
    ln = model.ln_final
    scale = (final.var(-1, unbiased=False) + ln.eps).sqrt()  # (batch,): frozen from the full forward pass
    W_U = model.unembedding()  # (d_model, d_vocab)
    direction = (W_U[:, a] - W_U[:, b]).T  # (batch, d_model)
    read = direction * ln.w  # (batch, d_model): what a normalised stream is dotted with

    def part(c: Tensor) -> Tensor:  # c: (batch, ..., d_model) -> (batch, ...)
        centred = c - c.mean(-1, keepdim=True)
        shape = (batch,) + (1,) * (c.ndim - 2)
        return (centred / scale.view(shape + (1,)) * read.view(shape + (-1,))).sum(-1)

    parts = {"embed": part(embed), "heads": part(heads), "attn_bias": part(attn_bias), "mlps": part(mlps)}
    parts["ln_bias"] = (direction * ln.b).sum(-1) if ln.b is not None else torch.zeros_like(scale)
    parts["total"] = (parts["embed"] + parts["heads"].sum((1, 2)) + parts["attn_bias"].sum(1)
                      + parts["mlps"].sum(1) + parts["ln_bias"])
    logits = model(tokens)[:, position]  # (batch, d_vocab): the model's own forward pass
    parts["logit_diff"] = logits.gather(1, a[:, None])[:, 0] - logits.gather(1, b[:, None])[:, 0]
    parts["scale"] = scale
    return parts
