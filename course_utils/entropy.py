"""How much a next-token distribution leaves open, and how surprised the model is by the right token.

Covers ``entropy`` (in nats, with 0·log 0 = 0: 0 for a one-hot distribution, ln d_vocab for a
uniform one; notebook 04 watches it fall as the temperature drops) and ``cross_entropy``
(the mean of -ln softmax(logits)[target] over rows, computed stably with the row maximum
shifted out of the log-sum-exp: the training loss of notebook 09, equal to
``torch.nn.functional.cross_entropy``, tested). Both work on the last dimension.
``entropy(torch.tensor([0.5, 0.5]))`` -> ``0.693``; ``cross_entropy(tensor([[6.2, 4.9, 2.1, 1.0]]), tensor([0]))``
-> ``0.259``. Both can be imported from ``course_utils.sampling`` too.
Leaves out entropy in bits, label smoothing, ignored targets and perplexity (``exp`` of the loss).
"""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor

from course_utils.softmax import row_entropy
from course_utils.validate import vocab_rows


def entropy(probs: Float[Tensor, "... d_vocab"]) -> Float[Tensor, "..."]:
    """Entropy in nats, with 0·log 0 = 0: ``entropy(tensor([0.5, 0.5]))`` -> ``0.693``; one-hot -> ``0``."""
    vocab_rows("probs", probs, probs=True)
    return row_entropy(probs) + 0.0  # + 0.0 turns -0.0 (a one-hot row) into 0.0


def cross_entropy(logits: Float[Tensor, "n d_vocab"], targets: Int[Tensor, "n"]) -> Float[Tensor, ""]:
    """Mean over rows of -ln softmax(logits)[target], computed stably (log-sum-exp with the max shifted out).

    ``cross_entropy(tensor([[6.2, 4.9, 2.1, 1.0]]), tensor([0]))`` -> ``0.259`` (= -ln 0.772).
    Same numbers as ``torch.nn.functional.cross_entropy`` (tested).
    """
    vocab_rows("logits", logits)
    if logits.ndim != 2:
        raise ValueError(f"logits must have shape (n, d_vocab), got {tuple(logits.shape)}")
    if (
        not isinstance(targets, Tensor)
        or targets.dtype not in (torch.int32, torch.int64)
        or targets.shape != logits.shape[:1]
    ):
        raise ValueError(
            f"targets must be an int tensor of shape ({logits.shape[0]},), got "
            f"{getattr(targets, 'dtype', type(targets).__name__)} {tuple(getattr(targets, 'shape', ()))}"
        )
    if bool(((targets < 0) | (targets >= logits.shape[-1])).any()):
        raise ValueError(f"targets must be token ids in 0..{logits.shape[-1] - 1}, got {targets.tolist()}")
    top = logits.amax(dim=-1, keepdim=True)  # (n, 1)
    log_total = top.squeeze(-1) + (logits - top).exp().sum(dim=-1).log()  # (n,): ln sum_j e^logit_j
    right = logits.gather(-1, targets[:, None].long()).squeeze(-1)  # (n,): the right token's logit
    return (log_total - right).mean()
