"""Activation patching: copy one activation from a clean run into a corrupted run and see how much comes back.

Two prompts of the same length differ where it matters (the clean one makes the model prefer token A over
token B at some position; the corrupted one does not). Run both, then rerun the corrupted prompt with one
activation taken from the clean run: one position's residual stream before block ``layer`` (``layer`` =
``n_layers`` is the final stream), or one head's output (through its ``W_O``, at every position). The metric
is the logit difference ``logit_A - logit_B`` at ``position`` (the mean over the batch), and
``restored fraction = (patched - corrupted) / (clean - corrupted)``: 1 when the patch brings the clean answer
back, 0 when it changes nothing. Every run goes through the same code (``run_with_patches``), so patching
nothing gives the corrupted run to the last bit, and patching the final stream at ``position`` the clean one.

Covers ``run_with_patches`` (one forward pass with any patches, returning its logits and its own activations),
``restored_fraction``, ``residual_patching_map`` ((n_layers + 1, pos)) and ``head_patching_map``
((n_layers, n_heads)). Leaves out path patching (patching one edge between two components), attribution
patching (its gradient approximation) and patching MLP neurons.
"""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.gpt.config import check_tokens
from course_utils.gpt.model import GPT
from course_utils.interp.logit_lens import check_gpt, check_position, check_token_ids
from course_utils.masking import causal_mask
from course_utils.validate import has_data, int_in


def _check_cache(cache, model: GPT, tokens: Tensor) -> dict:
    batch, n_pos = tokens.shape
    cfg = model.cfg
    shapes = {"resid": (cfg.n_layers + 1, batch, n_pos, cfg.d_model),
              "heads": (cfg.n_layers, batch, cfg.n_heads, n_pos, cfg.d_model)}
    if not isinstance(cache, dict) or set(cache) != set(shapes):
        raise TypeError("cache must be the dict {'resid', 'heads'} that run_with_patches returns for the clean run")
    for name, shape in shapes.items():
        if not isinstance(cache[name], Tensor) or tuple(cache[name].shape) != shape:
            raise ValueError(f"cache[{name!r}] must have shape {shape} (the clean run of a prompt of this shape), "
                             f"got {tuple(getattr(cache[name], 'shape', ()))}")
    return cache


def _pairs(name: str, value) -> set:
    try:
        pairs = {tuple(p) for p in value}
    except TypeError:
        pairs = None
    if pairs is None or any(len(p) != 2 for p in pairs):
        raise TypeError(f"{name} must be an iterable of (layer, {'position' if name == 'resid' else 'head'}) pairs")
    return pairs


def _check_patches(resid, heads, cfg, n_pos: int) -> tuple[set, set]:
    resid, heads = _pairs("resid", resid), _pairs("heads", heads)
    for layer, pos in resid:
        int_in("resid layer", layer, 0, cfg.n_layers, high_name="n_layers")
        int_in("resid position", pos, 0, n_pos - 1, high_name="pos - 1")
    for layer, head in heads:
        int_in("heads layer", layer, 0, cfg.n_layers - 1, high_name="n_layers - 1")
        int_in("heads head", head, 0, cfg.n_heads - 1, high_name="n_heads - 1")
    return resid, heads


@torch.no_grad()
def run_with_patches(
    model: GPT, tokens: Int[Tensor, "batch pos"], cache: dict | None = None, resid=(), heads=()
) -> tuple[Float[Tensor, "batch pos d_vocab"], dict[str, Tensor]]:
    """The forward pass on ``tokens`` with activations copied from ``cache`` (a clean run's second output).

    ``resid``: (layer, position) pairs, the stream entering block ``layer`` (``n_layers``: the final stream) at
    that position is replaced; ``heads``: (layer, head) pairs, that head's output is replaced at every position.
    Returns ``(logits, {"resid": (n_layers + 1, batch, pos, d_model), "heads": (n_layers, batch, head, pos,
    d_model)})``, the activations of this run (after patching). Same numbers as ``model(tokens)`` up to rounding.
    """
    check_gpt(model)
    tokens = check_tokens(tokens, model.cfg)
    resid, heads = _check_patches(resid, heads, model.cfg, tokens.shape[1])
    if (resid or heads) and cache is None:
        raise ValueError("cache is needed to patch: pass the second output of run_with_patches on the clean prompt")
    if cache is not None:
        _check_cache(cache, model, tokens)

    def patch_stream(x: Tensor, layer: int) -> Tensor:
        positions = [pos for lay, pos in resid if lay == layer]
        if positions:
            x = x.clone()
            x[:, positions] = cache["resid"][layer][:, positions]
        return x

    mask = causal_mask(tokens.shape[1], device=tokens.device)
    x = patch_stream(model.embed(tokens), 0)  # (batch, pos, d_model)
    found = {"resid": [x], "heads": []}
    for layer, block in enumerate(model.blocks):
        parts = block.attn.per_head_contributions(block.ln1(x), mask)  # (batch, head, pos, d_model)
        chosen = [h for lay, h in heads if lay == layer]
        if chosen:
            parts = parts.clone()
            parts[:, chosen] = cache["heads"][layer][:, chosen]
        attn_out = parts.sum(1) if block.attn.b_O is None else parts.sum(1) + block.attn.b_O
        x = x + attn_out
        x = patch_stream(x + block.mlp(block.ln2(x)), layer + 1)
        found["heads"].append(parts)
        found["resid"].append(x)
    return model.unembed(x), {name: torch.stack(v) for name, v in found.items()}


def restored_fraction(patched, clean, corrupted, min_gap: float = 1e-6):
    """``(patched - corrupted) / (clean - corrupted)``: numbers or tensors (elementwise).

    ValueError when ``clean`` and ``corrupted`` are closer than ``min_gap``: the prompts then do not differ in
    the metric, and no fraction of a zero difference means anything.
    """
    gap = clean - corrupted
    if isinstance(gap, Tensor):
        small = has_data(gap) and bool((gap.abs() < min_gap).any())  # values unknown on meta: shapes only
    else:
        small = abs(gap) < min_gap
    if small:
        raise ValueError(f"clean and corrupted must differ by at least min_gap={min_gap}, got {gap}")
    return (patched - corrupted) / gap


def _setup(model, clean_tokens, corrupted_tokens, position, token_a, token_b):
    check_gpt(model)
    clean_tokens = check_tokens(clean_tokens, model.cfg)
    corrupted_tokens = check_tokens(corrupted_tokens, model.cfg)
    if clean_tokens.shape != corrupted_tokens.shape:
        raise ValueError("clean_tokens and corrupted_tokens must have the same shape (same length), got "
                         f"{tuple(clean_tokens.shape)} and {tuple(corrupted_tokens.shape)}")
    batch, n_pos = clean_tokens.shape
    position = check_position(position, n_pos)
    a = check_token_ids("token_a", token_a, batch, model.cfg.d_vocab).to(clean_tokens.device)
    b = check_token_ids("token_b", token_b, batch, model.cfg.d_vocab).to(clean_tokens.device)
    rows = torch.arange(batch, device=clean_tokens.device)

    def metric(logits: Tensor) -> Tensor:  # mean over the batch of logit_A - logit_B at position
        return (logits[rows, position, a] - logits[rows, position, b]).mean()

    clean_logits, cache = run_with_patches(model, clean_tokens)
    corrupted_logits, _ = run_with_patches(model, corrupted_tokens)
    return clean_tokens, corrupted_tokens, metric, metric(clean_logits), metric(corrupted_logits), cache


@torch.no_grad()
def residual_patching_map(
    model: GPT, clean_tokens: Int[Tensor, "batch pos"], corrupted_tokens: Int[Tensor, "batch pos"],
    position: int, token_a, token_b,
) -> Float[Tensor, "layer pos"]:
    """Restored fraction of the logit difference at ``position`` when the clean stream entering block ``layer``
    (row ``n_layers``: the final stream) at one position (column) is patched into the corrupted run.

    Column ``position`` of the last row is exactly 1; a column where both prompts hold the same token is exactly
    0 in row 0 (the same embedding), and every column after ``position`` is 0 (the mask hides it).
    """
    _, corrupted, metric, clean, base, cache = _setup(model, clean_tokens, corrupted_tokens, position,
                                                      token_a, token_b)
    found = torch.empty(model.cfg.n_layers + 1, corrupted.shape[1], dtype=clean.dtype, device=clean.device)
    for layer in range(model.cfg.n_layers + 1):
        for pos in range(corrupted.shape[1]):
            logits, _ = run_with_patches(model, corrupted, cache, resid=[(layer, pos)])
            found[layer, pos] = restored_fraction(metric(logits), clean, base)
    return found


@torch.no_grad()
def head_patching_map(
    model: GPT, clean_tokens: Int[Tensor, "batch pos"], corrupted_tokens: Int[Tensor, "batch pos"],
    position: int, token_a, token_b,
) -> Float[Tensor, "layer head"]:
    """Restored fraction of the logit difference at ``position`` when one head's clean output (at every
    position) is patched into the corrupted run: (n_layers, n_heads)."""
    _, corrupted, metric, clean, base, cache = _setup(model, clean_tokens, corrupted_tokens, position,
                                                      token_a, token_b)
    found = torch.empty(model.cfg.n_layers, model.cfg.n_heads, dtype=clean.dtype, device=clean.device)
    for layer in range(model.cfg.n_layers):
        for head in range(model.cfg.n_heads):
            logits, _ = run_with_patches(model, corrupted, cache, heads=[(layer, head)])
            found[layer, head] = restored_fraction(metric(logits), clean, base)
    return found
