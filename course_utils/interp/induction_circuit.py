"""An induction circuit found three ways in a two-layer attention-only model: pattern, ablation, composition.

The model is notebook 05's ``AttentionOnlyTransformer`` (no MLPs, no LayerNorm) with two heads per layer,
trained here on the copy task: a random half of ``k`` tokens, then the same ``k`` tokens again (``k`` drawn
per row between ``min_period`` and ``max_period``, random filler after the copy), the loss taken on the copy
only. ``k`` varies so the copy cannot be found from positions alone. Then:

- ``induction_scores`` (notebook 05's) on a repeated half names the layer-1 head that looks at the token after
  the current token's earlier copy;
- zeroing that head's output (``ablated_logits``) raises the loss on the repeated half (``copy_loss``), and
  zeroing each layer-0 head in turn names the one the circuit needs most (the "feeding" head);
- the K-composition score of Elhage et al. (2021) says which layer-0 head writes what that head's keys read:
  with row vectors (``x @ W``), ``W_QK = W_Q W_Kᵀ`` and ``W_OV = W_V W_O`` per head, a layer-0 head's write
  ``x W_OV`` enters the layer-1 head's keys, its scores become ``x_q W_QK (x_src W_OV)ᵀ``, and
  ``k_composition = ‖W_QK^{h2} (W_OV^{h1})ᵀ‖_F / (‖W_QK^{h2}‖_F ‖W_OV^{h1}‖_F)`` (TransformerLens's
  ``OV @ QK.T``; the paper's ``W_QKᵀ W_OV`` in its column convention). ``random_composition_baseline`` is the
  same score for random Gaussian factors of the same shapes, the level that means "no composition".

Weights only (biases left out of the composition scores, as in the paper). ``circuit_reading`` does all of it
for one trained model. Measured on seeds 0-11 (400 steps): the top K-composition partner was the feeding head on
all 12 (by 0.03 to 0.14 in score, the random baseline being 0.18), and the layer-0 head with the top
previous-token score on 9: on seeds 5, 6 and 10 the feeding head's previous-token score is 0.0 to 0.27, below the
other head's, so that score points at the other head while the weights and the ablation agree.
Seeded from local generators, so a seed is a run. Leaves out Q- and V-composition,
path patching and models with MLPs.
"""

from __future__ import annotations

import copy
import functools

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.attention.head_scores import top_head
from course_utils.attention.induction import (AttentionOnlyTransformer, InductionConfig, induction_scores,
                                              previous_token_scores, repeated_sequences)
from course_utils.env.threads import torch_threads
from course_utils.masking import causal_mask
from course_utils.validate import float_tensor, int_in, integer, positive_int

# Two heads per layer: with four (d_model 32 or 64) the copy is shared by several redundant induction heads,
# zeroing the top one cost only 0.02-0.18 nats, and on seed 0 its top K-composition partner was not the
# previous-token head (measured on five seeds, 400 and 800 steps; see the docstring above).
COPY_TASK = InductionConfig(d_vocab=16, n_ctx=12, min_period=3, max_period=6, d_model=32, n_heads=2, n_layers=2,
                            steps=400, batch=64, lr=1e-2)


def copy_sequences(
    n_seqs: int, cfg: InductionConfig = COPY_TASK, generator: torch.Generator | None = None
) -> tuple[Int[Tensor, "batch n_ctx"], Int[Tensor, "batch"]]:
    """``(tokens, halves)``: each row a random half of ``k`` tokens, the same ``k`` again, then random filler.

    ``k`` is drawn per row from ``min_period .. max_period`` (at most n_ctx // 2): ``[7, 1, 4, 7, 1, 4, 9, ...]``.
    """
    positive_int("n_seqs", n_seqs)
    if 2 * cfg.max_period > cfg.n_ctx or cfg.min_period < 2:
        raise ValueError(f"cfg must have 2 <= min_period and 2 * max_period <= n_ctx, got {cfg}")
    halves = torch.randint(cfg.min_period, cfg.max_period + 1, (n_seqs,), generator=generator)
    drawn = torch.randint(0, cfg.d_vocab, (n_seqs, cfg.n_ctx), generator=generator)
    pos = torch.arange(cfg.n_ctx)[None, :]
    index = torch.where(pos < 2 * halves[:, None], pos % halves[:, None], pos)  # the copy reads the first half
    return drawn.gather(1, index), halves


def copy_loss(
    logits: Float[Tensor, "batch pos d_vocab"], tokens: Int[Tensor, "batch pos"], halves: Int[Tensor, "batch"]
) -> Float[Tensor, ""]:
    """Mean cross-entropy over the predictable copy tokens: targets at positions ``k + 1 .. 2k - 1`` of each row
    (the copy's first token is not predictable: nothing says where the first half ends)."""
    per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")  # (batch, pos - 1)
    target = torch.arange(1, tokens.shape[1], device=tokens.device)[None, :]
    halves = halves.to(tokens.device)[:, None]
    return per_token[(target > halves) & (target < 2 * halves)].mean()


def train_copy_model(
    cfg: InductionConfig = COPY_TASK, seed: int = 0, cpu_threads: int | None = 1
) -> tuple[AttentionOnlyTransformer, list[float]]:
    """Train from scratch on ``copy_sequences`` with Adam; returns the model (CPU, eval mode) and each step's loss.

    Weights and batches come from one ``torch.Generator`` seeded ``seed``; the position embedding is redrawn
    with std 1 (notebook 05's model starts it at 0.1), which lets a previous-token head form sooner.
    """
    integer("seed", seed)
    with torch_threads(cpu_threads, name="cpu_threads"):
        gen = torch.Generator().manual_seed(seed)
        model = AttentionOnlyTransformer(cfg, generator=gen)
        with torch.no_grad():
            model.W_pos.normal_(0.0, 1.0, generator=gen)
        optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        losses = []
        for _ in range(cfg.steps):
            tokens, halves = copy_sequences(cfg.batch, cfg, gen)
            loss = copy_loss(model(tokens), tokens, halves)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
    return model.eval(), losses


@functools.lru_cache(maxsize=8)
def _remembered(cfg: InductionConfig, seed: int) -> tuple[AttentionOnlyTransformer, tuple[float, ...]]:
    model, losses = train_copy_model(cfg, seed)
    return model, tuple(losses)


def trained_copy_model(cfg: InductionConfig = COPY_TASK, seed: int = 0) -> tuple[AttentionOnlyTransformer, list]:
    """``train_copy_model`` once per (cfg, seed) in this process; each call returns a fresh copy."""
    model, losses = _remembered(cfg, integer("seed", seed))
    return copy.deepcopy(model), list(losses)


def _check_model(model) -> AttentionOnlyTransformer:
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    return model


@torch.no_grad()
def ablated_logits(
    model: AttentionOnlyTransformer, tokens: Int[Tensor, "batch pos"], layer: int, head: int
) -> Float[Tensor, "batch pos d_vocab"]:
    """The model's logits with head ``head`` of layer ``layer`` writing zeros (every other head as usual)."""
    _check_model(model)
    int_in("layer", layer, 0, model.cfg.n_layers - 1, high_name="n_layers - 1")
    int_in("head", head, 0, model.cfg.n_heads - 1, high_name="n_heads - 1")
    if not isinstance(tokens, Tensor) or tokens.ndim != 2 or tokens.shape[1] > model.cfg.n_ctx:
        raise ValueError(f"tokens must have shape (batch, pos <= n_ctx={model.cfg.n_ctx}), "
                         f"got {getattr(tokens, 'shape', type(tokens).__name__)}")
    resid = model.W_E[tokens] + model.W_pos[: tokens.shape[1]]  # (batch, pos, d_model)
    mask = causal_mask(tokens.shape[1], device=tokens.device)
    for i, attn in enumerate(model.layers):
        parts = attn.per_head_contributions(resid, mask)  # (batch, head, pos, d_model)
        keep = torch.ones(parts.shape[1], dtype=parts.dtype, device=parts.device)
        keep[head] = 0.0 if i == layer else 1.0
        out = (parts * keep[None, :, None, None]).sum(1)
        resid = resid + (out if attn.b_O is None else out + attn.b_O)
    return resid @ model.W_U


def composition_score(left: Float[Tensor, "d d"], right: Float[Tensor, "d d"]) -> Float[Tensor, ""]:
    """``‖left @ right‖_F / (‖left‖_F ‖right‖_F)``: 1 at most (Cauchy-Schwarz), near 0 for unrelated maps."""
    for name, m in (("left", left), ("right", right)):
        float_tensor(name, m, "(d, d)", min_dims=2, finite=False)
    if left.ndim != 2 or right.ndim != 2 or left.shape[1] != right.shape[0]:
        raise ValueError(f"left and right must be matrices that multiply, got {tuple(left.shape)} and "
                         f"{tuple(right.shape)}")
    return (left @ right).norm() / (left.norm() * right.norm())


def k_composition_scores(model: AttentionOnlyTransformer, layer: int = 1) -> Float[Tensor, "head_before head"]:
    """(n_heads of layer - 1, n_heads of ``layer``): entry [h1, h2] is ``‖W_QK^{h2} (W_OV^{h1})ᵀ‖_F / (‖·‖ ‖·‖)``."""
    _check_model(model)
    int_in("layer", layer, 1, model.cfg.n_layers - 1, high_name="n_layers - 1")
    before, after = model.layers[layer - 1], model.layers[layer]
    with torch.no_grad():
        W_OV = before.W_V @ before.W_O  # (head, d_model, d_model)
        W_QK = after.W_Q @ after.W_K.transpose(1, 2)  # (head, d_model, d_model), query side on the left
        return torch.stack([torch.stack([composition_score(qk, ov.T) for qk in W_QK]) for ov in W_OV])


def random_composition_baseline(d_model: int, d_head: int, n_samples: int = 200, seed: int = 0) -> float:
    """Mean K-composition score of random heads: W_Q, W_K, W_V, W_O drawn Gaussian with the given sizes."""
    positive_int("d_model", d_model), positive_int("d_head", d_head), positive_int("n_samples", n_samples)
    gen = torch.Generator().manual_seed(integer("seed", seed))
    W_Q, W_K, W_V = (torch.randn(n_samples, d_model, d_head, generator=gen) for _ in range(3))
    W_O = torch.randn(n_samples, d_head, d_model, generator=gen)
    scores = [composition_score(q @ k.T, (v @ o).T) for q, k, v, o in zip(W_Q, W_K, W_V, W_O)]
    return float(torch.stack(scores).mean())


@torch.no_grad()
def circuit_reading(model: AttentionOnlyTransformer, n_seqs: int = 256, seed: int = 1000) -> dict:
    """Everything above for one trained model, measured on ``n_seqs`` repeated halves of ``n_ctx // 2`` tokens
    (``repeated_sequences``, a generator seeded ``seed``):

    ``induction`` (layer 1's induction scores), ``previous`` (layer 0's previous-token scores), ``induction_head``
    and ``previous_head`` (each the top one, ``head_scores.top_head``), ``loss`` (the repeated half's loss) and
    ``ablated_loss`` (per layer-1 head, that head zeroed), ``k_composition`` ((layer-0 head, layer-1 head)),
    ``partner`` (the layer-0 head composing most with the induction head) and ``baseline``
    (``random_composition_baseline`` for this model's sizes).
    """
    _check_model(model)
    cfg = model.cfg
    half = cfg.n_ctx // 2
    tokens = repeated_sequences(n_seqs, half, cfg.d_vocab, torch.Generator().manual_seed(integer("seed", seed)))
    halves = torch.full((n_seqs,), half)
    patterns = model.patterns(tokens)
    induction, previous = induction_scores(patterns[1], half), previous_token_scores(patterns[0])
    head = top_head([induction])[1]
    composition = k_composition_scores(model, 1)
    ablated_0 = [float(copy_loss(ablated_logits(model, tokens, 0, h), tokens, halves)) for h in range(cfg.n_heads)]
    return {
        "induction": induction, "previous": previous, "induction_head": head,
        "previous_head": top_head([previous])[1],
        "loss": float(copy_loss(model(tokens), tokens, halves)),
        "ablated_loss": [float(copy_loss(ablated_logits(model, tokens, 1, h), tokens, halves))
                         for h in range(cfg.n_heads)],
        "ablated_loss_0": ablated_0, "feeding_head": top_head([torch.tensor(ablated_0)])[1],
        "k_composition": composition, "partner": top_head([composition[:, head]])[1],
        "baseline": random_composition_baseline(cfg.d_model, cfg.d_model // cfg.n_heads),
    }
