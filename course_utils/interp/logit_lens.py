"""The logit lens: read the residual stream after every block as if it were the last one.

The stream after the embedding and after each block of a pre-norm ``GPT`` is decoded by the model's own
final LayerNorm and unembedding (``model.unembed``), so "layer L's guess" is what the model would say if
the blocks after L wrote nothing. Covers ``residual_stream`` (the ``n_layers + 1`` streams, index 0 the
embedding, index ``n_layers`` the final stream), ``lens_logits`` (each of them decoded: the last equals the
model's logits) and ``lens_readout`` (per layer at one position: the top tokens and their probabilities,
and a target token's probability and rank) and ``lens_top_tokens`` (the top token and its probability at every
layer and position: notebook 13's lens table). Also ``check_gpt`` and ``check_position``, the argument checks
the other modules of this package share.
``lens_readout(model, tokens, -1, target)["target_rank"]`` -> (n_layers + 1, batch), 0 where it is on top.
Leaves out the tuned lens (a learned translator per layer) and post-norm models (their stream is
rescaled after every block, so it has no single readout).
"""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.gpt.config import check_tokens
from course_utils.gpt.model import GPT
from course_utils.validate import int_tensor, integer, positive_int


def check_gpt(model) -> GPT:
    """``model`` if it is a pre-norm course ``GPT``; TypeError / ValueError naming ``model`` otherwise."""
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a course_utils.gpt.model.GPT, got {type(model).__name__}")
    if model.cfg.norm != "pre":
        raise ValueError("model must be pre-norm: a post-norm model rescales its stream after every block")
    return model


def check_position(position, n_pos: int, name: str = "position") -> int:
    """``position`` as an index in ``0 .. n_pos - 1``; negative counts from the end (-1 is the last)."""
    integer(name, position)
    if not -n_pos <= position < n_pos:
        raise ValueError(f"{name} must lie in [-{n_pos}, {n_pos}) for {n_pos} positions, got {position}")
    return position % n_pos


def check_token_ids(name: str, value, batch: int, d_vocab: int) -> Tensor:
    """An int, or a (batch,) integer tensor, of token ids in ``[0, d_vocab)``, as a (batch,) tensor."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = torch.full((batch,), value, dtype=torch.long)
    int_tensor(name, value, " (token ids)")
    if value.ndim != 1 or value.shape[0] != batch:
        raise ValueError(f"{name} must be an int or a (batch,) = ({batch},) tensor of token ids, "
                         f"got shape {tuple(value.shape)}")
    if value.device.type != "meta" and value.numel() and (int(value.min()) < 0 or int(value.max()) >= d_vocab):
        raise ValueError(f"{name} must lie in [0, d_vocab={d_vocab}), got {value.tolist()}")
    return value


@torch.no_grad()
def residual_stream(model: GPT, tokens: Int[Tensor, "batch pos"]) -> Float[Tensor, "layer batch pos d_model"]:
    """The stream after the embedding (index 0) and after each block (index i + 1): (n_layers + 1, batch, pos, d_model).

    Computed with the model's own blocks, so index ``n_layers`` is exactly what ``model.unembed`` reads.
    """
    check_gpt(model)
    tokens = check_tokens(tokens, model.cfg)
    x = model.embed(tokens)  # (batch, pos, d_model)
    streams = [x]
    for block in model.blocks:
        x = block(x)
        streams.append(x)
    return torch.stack(streams)


@torch.no_grad()
def lens_logits(model: GPT, tokens: Int[Tensor, "batch pos"]) -> Float[Tensor, "layer batch pos d_vocab"]:
    """Every stream of ``residual_stream`` through the final LayerNorm and the unembedding.

    ``lens_logits(model, tokens)[-1]`` equals ``model(tokens)``; index 0 is what the embedding alone predicts.
    """
    return model.unembed(residual_stream(model, tokens))  # (layer, batch, pos, d_vocab)


@torch.no_grad()
def lens_readout(
    model: GPT, tokens: Int[Tensor, "batch pos"], position: int, target, k: int = 5
) -> dict[str, Tensor]:
    """The logit lens at ``position`` (negative counts from the end), layer by layer.

    ``target``: an int or a (batch,) tensor of token ids (say, the token that really comes next).
    Returns ``{"top_ids", "top_probs"}`` of shape (n_layers + 1, batch, k) (most probable first) and
    ``{"target_prob", "target_rank"}`` of shape (n_layers + 1, batch); the rank counts the tokens with a
    strictly higher logit (0: the target is on top), so ties never push the target down.
    """
    check_gpt(model)
    tokens = check_tokens(tokens, model.cfg)
    position = check_position(position, tokens.shape[1])
    target = check_token_ids("target", target, tokens.shape[0], model.cfg.d_vocab).to(tokens.device)
    positive_int("k", k)
    if k > model.cfg.d_vocab:
        raise ValueError(f"k must be at most d_vocab={model.cfg.d_vocab}, got {k}")
    logits = lens_logits(model, tokens)[:, :, position]  # (layer, batch, d_vocab)
    probs = logits.softmax(-1)
    top = probs.topk(k, dim=-1)  # (layer, batch, k)
    index = target[None, :, None].expand(logits.shape[0], -1, 1)  # (layer, batch, 1)
    target_logit = logits.gather(-1, index)  # (layer, batch, 1)
    return {
        "top_ids": top.indices,
        "top_probs": top.values,
        "target_prob": probs.gather(-1, index)[..., 0],
        "target_rank": (logits > target_logit).sum(-1),
    }


@torch.no_grad()
def lens_top_tokens(model: GPT, tokens: Int[Tensor, "batch pos"]) -> dict[str, Tensor]:
    """The lens's most probable token at every layer and position, and its probability.

    Returns ``{"top_ids", "top_probs"}``, both (n_layers + 1, batch, pos): index 0 the embedding, index ``i + 1``
    the stream after block ``i``. ``lens_top_tokens(model, tokens)["top_ids"][-1]`` is ``model(tokens).argmax(-1)``.
    """
    probs = lens_logits(model, tokens).softmax(-1)  # (layer, batch, pos, d_vocab)
    top = probs.max(-1)  # (layer, batch, pos)
    return {"top_ids": top.indices, "top_probs": top.values}
