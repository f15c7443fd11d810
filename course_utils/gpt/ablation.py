"""Ablating one attention head: what the loss does when a head's write to the residual stream is removed.

Covers ``ablated_logits`` (the model's forward pass with one head's output replaced by zeros, or by
its mean over the batch at each position) and ``head_ablation_losses`` (the next-token loss at every
position with and without the head). An attention share says where a head *looks*; the loss change
says whether the model *uses* what it finds there, and at which positions.
``head_ablation_losses(model, tokens, 0, 1)["ablated"] - ...["clean"]`` -> per-position loss change.
``head_findings`` is notebook 11's reading of one trained model in one call: its previous-token head and
its delimiter head (each the highest-scoring, ``head_scores.top_head``) and what ablating each costs
inside words and elsewhere, so the same reading can be repeated on every seed (``gpt_outcomes``).
Leaves out path patching, activation patching between two inputs, and post-norm models.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float, Int
from torch import Tensor

from course_utils.gpt.model import GPT
from course_utils.gpt.config import check_tokens
from course_utils.attention.head_scores import chance_delimiter_share, delimiter_scores, top_head
from course_utils.attention.induction import previous_token_scores
from course_utils.masking import causal_mask
from course_utils.validate import int_in, one_of


def _check(model, layer, head, mode) -> None:
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a course_utils.gpt.model.GPT, got {type(model).__name__}")
    if model.cfg.norm != "pre":
        raise ValueError("model must be pre-norm: ablation removes a head's write from the residual stream")
    int_in("layer", layer, 0, model.cfg.n_layers - 1, high_name="n_layers - 1")
    int_in("head", head, 0, model.cfg.n_heads - 1, high_name="n_heads - 1")
    one_of("mode", mode, ("zero", "mean"))


@torch.no_grad()
def ablated_logits(
    model: GPT, tokens: Int[Tensor, "batch pos"], layer: int, head: int, mode: str = "zero"
) -> Float[Tensor, "batch pos d_vocab"]:
    """Logits with head ``head`` of block ``layer`` ablated: its write replaced by zeros (``"zero"``)
    or by its mean over the batch at each position (``"mean"``); every other head runs as usual."""
    _check(model, layer, head, mode)
    tokens = check_tokens(tokens, model.cfg)
    x = model.embed(tokens)  # (batch, pos, d_model)
    for i, block in enumerate(model.blocks):
        if i != layer:
            x = block(x)
            continue
        attn = block.attn
        parts = attn.per_head_contributions(block.ln1(x), causal_mask(tokens.shape[1], device=x.device))
        # parts: (batch, head, pos, d_model), each head's z through its own W_O[h]
        own = parts[:, head]  # (batch, pos, d_model)
        replacement = torch.zeros_like(own) if mode == "zero" else own.mean(0, keepdim=True).expand_as(own)
        attn_out = parts.sum(1) - own + replacement
        x = x + (attn_out if attn.b_O is None else attn_out + attn.b_O)
        x = x + block.mlp(block.ln2(x))
    return model.unembed(x)


@torch.no_grad()
def head_ablation_losses(
    model: GPT, tokens: Int[Tensor, "batch pos"], layer: int, head: int, mode: str = "zero"
) -> dict[str, Float[Tensor, "batch pos_minus_1"]]:
    """Next-token loss at every position (position i scored against token i + 1), clean and ablated.

    Returns ``{"clean", "ablated"}``, each (batch, pos - 1); their difference is what the head is
    worth at each position (positive: the model does worse without it).
    """
    _check(model, layer, head, mode)
    tokens = check_tokens(tokens, model.cfg)
    if tokens.shape[1] < 2:
        raise ValueError(f"tokens needs at least 2 positions to score a next token, got {tokens.shape[1]}")
    ablated = ablated_logits(model, tokens, layer, head, mode)
    return {"clean": _losses(model(tokens), tokens), "ablated": _losses(ablated, tokens)}


def _losses(logits: Tensor, tokens: Tensor) -> Tensor:
    """(batch, pos - 1): position i's logits scored against token i + 1."""
    targets = tokens[:, 1:]  # (batch, pos - 1)
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), targets.flatten(), reduction="none").view(targets.shape)


def inside_word(pieces: list[list[str]]) -> torch.Tensor:
    """(batch, pos) bool: True where a token continues the word its previous token began (both letters).

    ``inside_word([["R", "om", "eo", ":", "\\n", "Wh", "at", " say"]])`` ->
    ``[[False, True, True, False, False, False, True, False]]``. There the previous token says most
    about what comes next (the rest of the same word).
    """
    if not isinstance(pieces, list) or not all(isinstance(row, list) for row in pieces):
        raise TypeError("pieces must be a list of lists of decoded token strings")
    if any(not isinstance(s, str) for row in pieces for s in row):
        raise TypeError("pieces must hold decoded token strings")
    if len({len(row) for row in pieces}) > 1:
        raise ValueError("pieces' rows must all have the same length")
    flags = [[False] + [a[-1:].isalpha() and b[:1].isalpha() for a, b in zip(row, row[1:])] for row in pieces]
    return torch.tensor(flags, dtype=torch.bool)


@torch.no_grad()
def head_findings(
    model: GPT, tokens: Int[Tensor, "batch pos"], is_delimiter: Bool[Tensor, "batch pos"],
    inside: Bool[Tensor, "batch pos_minus_1"],
) -> dict[str, dict]:
    """``{"previous": {...}, "delimiter": {...}}``, each with the head ``(layer, head)`` scoring highest on
    ``tokens`` (previous-token score; share of attention on delimiters), its ``score``, and per ablation
    mode (``"zero"``, ``"mean"``) the mean loss change ``(inside, elsewhere, overall)`` in nats, with
    ``inside`` marking the scored positions that continue a word. The delimiter entry also has
    ``chance`` (``chance_delimiter_share``) and ``ratio`` (score / chance)."""
    tokens = check_tokens(tokens, model.cfg)
    scored = (tokens.shape[0], tokens.shape[1] - 1)
    if not isinstance(inside, Tensor) or inside.dtype != torch.bool or tuple(inside.shape) != scored:
        raise ValueError(f"inside must be a torch.bool tensor of shape (batch, pos - 1) = {scored}")
    patterns = [p.cpu() for p in model.patterns(tokens)]  # one (batch, head, q_pos, k_pos) per layer
    scores = {"previous": [previous_token_scores(p) for p in patterns],
              "delimiter": [delimiter_scores(p, is_delimiter.cpu()) for p in patterns]}
    found, clean = {}, _losses(model(tokens), tokens)
    for name, per_layer in scores.items():
        layer, head = top_head(per_layer)
        found[name] = {"head": (layer, head), "score": float(per_layer[layer][head])}
        for mode in ("zero", "mean"):
            ablated = _losses(ablated_logits(model, tokens, layer, head, mode), tokens)
            change = (ablated - clean).cpu()  # (batch, pos - 1) nats
            found[name][mode] = (float(change[inside].mean()), float(change[~inside].mean()), float(change.mean()))
    chance = chance_delimiter_share(is_delimiter.cpu())
    found["delimiter"].update(chance=chance, ratio=found["delimiter"]["score"] / chance)
    return found
