"""Exercise ``head_ablation_cost(model, tokens, layer, head, mode)``: what removing one head costs at each position.

Required form (stated in the notebook): for a pre-norm course ``GPT``, run the forward pass with head ``head``
of block ``layer`` ablated (its write, from ``block.attn.per_head_contributions``, replaced by zeros for
``mode="zero"`` or by its mean over the batch at each position for ``mode="mean"``; every other head, ``b_O``
and every other block as usual) and return the ablated model's next-token loss minus the clean model's at
every scored position, (batch, pos - 1), in nats. The check compares with ``ablation.head_ablation_losses``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.gpt.ablation import head_ablation_losses
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import tiny_model
from course_utils.masking import causal_mask


def head_ablation_cost(model, tokens, layer, head, mode):
    """Reference: ``head_ablation_losses``' ablated minus clean losses."""
    losses = head_ablation_losses(model, tokens, layer, head, mode)
    return losses["ablated"] - losses["clean"]


def _cost_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    model = tiny_model(seed)
    return [
        Case("a tiny GPT, head 0 of block 1 zero-ablated, 3 sequences of 9 tokens",
             (model, torch.randint(0, 23, (3, 9), generator=gen), 1, 0, "zero")),
        Case("head 1 of block 0 mean-ablated, 4 sequences of 12 tokens",
             (model, torch.randint(0, 23, (4, 12), generator=gen), 0, 1, "mean")),
    ]


def _per_position(logits, tokens):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")  # (batch, pos - 1)


def _cost(model, tokens, stream):
    return _per_position(model.unembed(stream), tokens) - _per_position(model(tokens), tokens)


bank = Bank()


@torch.no_grad()
def _ablated_stream(model, tokens, layer, head, mode, *, mean_dim=0, bias=True, whole_layer=False, every_layer=False):
    """The final stream with the head ablated, and the switches for the mistakes below."""
    x = model.embed(tokens)
    mask = causal_mask(tokens.shape[1])
    for i, block in enumerate(model.blocks):
        if i != layer and not every_layer:
            x = block(x)
            continue
        writes = block.attn.per_head_contributions(block.ln1(x), mask)  # (batch, head, pos, d_model)
        own = writes[:, head]
        replacement = torch.zeros_like(own) if mode == "zero" else own.mean(dim=mean_dim, keepdim=True)
        attn = replacement if whole_layer else writes.sum(dim=1) - own + replacement
        x = x + attn + (block.attn.b_O if bias else 0)
        x = x + block.mlp(block.ln2(x))
    return x


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "the mean over positions",
    "mean ablation replaces the head's write at each position by its average over the batch (dim 0), separately "
    "for every position",
)
@torch.no_grad()
def cost_mean_over_positions(model, tokens, layer, head, mode):
    return _cost(model, tokens, _ablated_stream(model, tokens, layer, head, mode, mean_dim=1))


@bank.mistake(
    "b_O dropped",
    "the attention layer's output is the heads' writes summed plus b_O: take out only the head's own write and "
    "keep the bias",
)
@torch.no_grad()
def cost_no_bias(model, tokens, layer, head, mode):
    return _cost(model, tokens, _ablated_stream(model, tokens, layer, head, mode, bias=False))


@bank.mistake(
    "the whole layer's heads removed",
    "ablate one head only: the other heads of that block still write into the stream",
)
@torch.no_grad()
def cost_whole_layer(model, tokens, layer, head, mode):
    return _cost(model, tokens, _ablated_stream(model, tokens, layer, head, mode, whole_layer=True))


@bank.mistake(
    "the head removed in every block",
    "only block `layer` changes; every other block runs as usual",
)
@torch.no_grad()
def cost_every_layer(model, tokens, layer, head, mode):
    return _cost(model, tokens, _ablated_stream(model, tokens, layer, head, mode, every_layer=True))


@bank.mistake(
    "clean minus ablated",
    "the cost is the ablated loss MINUS the clean one: positive where the model does worse without the head",
)
@torch.no_grad()
def cost_reversed(model, tokens, layer, head, mode):
    return -_cost(model, tokens, _ablated_stream(model, tokens, layer, head, mode))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("a forward hook on the block's attention, log_softmax and gather")
@torch.no_grad()
def _cost_hook(model, tokens, layer, head, mode):
    def swap(module, args, kwargs, output):
        own = module.per_head_contributions(*args, **kwargs)[:, head]  # (batch, pos, d_model)
        return output - own + (0 * own if mode == "zero" else own.mean(0).expand_as(own))

    def losses(logits):
        return -logits[:, :-1].log_softmax(-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)

    clean = losses(model(tokens))
    handle = model.blocks[layer].attn.register_forward_hook(swap, with_kwargs=True)
    try:
        ablated = losses(model(tokens))
    finally:
        handle.remove()
    return ablated - clean


@bank.alternative("the head's z replaced before W_O, einsum for the rest")
@torch.no_grad()
def _cost_z(model, tokens, layer, head, mode):
    x = model.embed(tokens)
    for i, block in enumerate(model.blocks):
        if i == layer:
            attn = block.attn
            z = attn.head_outputs(block.ln1(x), causal_mask(tokens.shape[1])).clone()  # (batch, head, pos, d_head)
            z[:, head] = 0.0 if mode == "zero" else z[:, head].mean(0)
            x = x + torch.einsum("bhpd,hdm->bpm", z, attn.W_O) + attn.b_O
            x = x + block.mlp(block.ln2(x))
        else:
            x = block(x)
    return _cost(model, tokens, x)


@bank.alternative("the head's write overwritten in place, flattened cross-entropy")
@torch.no_grad()
def _cost_overwrite(model, tokens, layer, head, mode):
    x = model.embed(tokens)
    mask = causal_mask(tokens.shape[1])
    for i, block in enumerate(model.blocks):
        if i != layer:
            x = block(x)
            continue
        parts = block.attn.per_head_contributions(block.ln1(x), mask).clone()
        parts[:, head] = 0 if mode == "zero" else parts[:, head].mean(dim=0, keepdim=True)
        x = x + parts.sum(1) + block.attn.b_O
        x = x + block.mlp(block.ln2(x))
    targets = tokens[:, 1:].reshape(-1)
    clean = F.cross_entropy(model(tokens)[:, :-1].reshape(len(targets), -1), targets, reduction="none")
    ablated = F.cross_entropy(model.unembed(x)[:, :-1].reshape(len(targets), -1), targets, reduction="none")
    return (ablated - clean).view(tokens.shape[0], -1)


HEAD_ABLATION_COST = Exercise(
    name="head_ablation_cost",
    reference=head_ablation_cost,
    cases=_cost_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Run the forward pass block by block yourself; every block but one runs as it is. In that one, compute the "
        "heads' writes separately, swap out one head's, and add the rest. Then score both models' logits.",
        "per_head_contributions gives (batch, head, pos, d_model); the attention write is their sum over heads plus "
        "b_O. The replacement is zeros, or the head's write averaged over dim 0. Per-position losses: cross-entropy "
        "with reduction='none', every position but the last scored against the token after it.",
    ],
)
EXERCISES = {HEAD_ABLATION_COST.name: HEAD_ABLATION_COST}


def check_head_ablation_cost(fn):
    """Check a student's ``head_ablation_cost(model, tokens, layer, head, mode)``."""
    return HEAD_ABLATION_COST.check(fn)
