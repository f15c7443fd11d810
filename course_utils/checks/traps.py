"""Course GPTs that show in their answers how a student's code ran them (notebooks 10's and 11's "how" requirements).

A requirement about *how* (run in eval mode, without gradients, feed the prompt once and then only the new
tokens) leaves no trace in a correct answer's value. These models make it leave one, so the grader can
verify it from outside the student's kernel, on the value it brings back, exactly as it verifies any answer:

- ``ModeTrapGPT``: in training mode (any sub-module's ``training`` flag on) its logits get one fixed shift,
  with gradients recorded (its logits ``requires_grad``) another. A validation loss computed without
  ``model.eval()``, without ``torch.no_grad()``, or without both, is three different wrong numbers, which
  the bank tells apart. Whether gradients are recorded is read from the logits through
  ``TensorBase.requires_grad``, bound in a closure when this module is imported, never from
  ``torch.is_grad_enabled`` (a notebook can rebind that) nor from anything stored on the model.
- ``TokenBudgetGPT``: it may run on ``budget`` positions per sequence in all (the prompt once, then each
  new token but the last); past that, every logit but the last token id's is -inf, a token no in-budget
  call ever draws (its logit is always -inf there). Sampling that re-feeds the sequence draws it.
  The count lives in a closure made when the model is built or unpickled, not in an attribute.

What the grader judges is the value these models lead to, in its own process. Code in the kernel that
replaces these classes' methods is tampering with the course's code there, which no kernel-side check
can rule out (``docs/grading.md``).

Leaves out: the exercises (``estimate_loss.py``, ``sample_with_cache.py``).
"""

from __future__ import annotations

import math

import torch

from course_utils.gpt.layer_cache import CachedGPT
from course_utils.gpt.model import GPT

def _pattern(n: int, scale: float, freq: float) -> torch.Tensor:
    """A fixed logit shift: ``scale * cos(freq * id)`` for ids 0 .. n-1."""
    return scale * torch.cos(freq * torch.arange(n, dtype=torch.float64))


TRAIN_SHIFT, GRAD_SHIFT = (0.8, 1.1), (0.6, 2.3)  # (scale, frequency) of the two shifts


def _trap_unembed(requires_grad=torch._C.TensorBase.requires_grad.__get__):
    """``ModeTrapGPT.unembed``, with autograd's own flag bound here, at import, in a closure: no name the
    notebook can rebind (``torch.is_grad_enabled``, ``torch.Tensor.requires_grad``, a module global) reaches it."""

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        logits = GPT.unembed(self, x)  # (batch, pos, d_vocab)
        d_vocab = logits.shape[-1]
        if any(m.training for m in self.modules()):
            logits = logits + _pattern(d_vocab, *TRAIN_SHIFT).to(logits.dtype)
        if requires_grad(logits):
            logits = logits + _pattern(d_vocab, *GRAD_SHIFT).to(logits.dtype)
        return logits

    return unembed


class ModeTrapGPT(GPT):
    """A course GPT whose logits change in training mode and when autograd records them."""

    unembed = _trap_unembed()


def _spender(budget: int):
    """A closure counting positions against ``budget``: ``spend(n)`` -> whether the budget is now overrun."""
    spent = [0]

    def spend(n: int) -> bool:
        spent[0] += n
        return spent[0] > budget

    return spend


class TokenBudgetGPT(CachedGPT):
    """A course GPT (called as ``model(tokens, cache)`` too) that may run on ``budget`` positions per sequence;
    past it, it always predicts its last id."""

    def __init__(self, cfg, budget: int):
        super().__init__(cfg)
        self.budget = budget
        self._arm()

    def _arm(self) -> None:
        spend, overrun = _spender(self.budget), [False]

        def embed_hook(n: int) -> None:
            overrun[0] = overrun[0] or spend(n)

        self._hooks = (embed_hook, lambda: overrun[0])

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_hooks", None)  # closures do not pickle: a copy starts with the whole budget again
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._arm()

    def embed(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        self._hooks[0](tokens.shape[1])
        return super().embed(tokens, start)

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        logits = super().unembed(x)  # (batch, pos, d_vocab)
        never = torch.zeros(logits.shape[-1], dtype=torch.bool, device=logits.device)
        never[-1] = True
        if self._hooks[1]():  # overrun: only the last id can be drawn
            return logits.masked_fill(~never, -math.inf).masked_fill(never, 0.0)
        return logits.masked_fill(never, -math.inf)


def trapped(model: GPT, cls: type, **kwargs) -> GPT:
    """A ``cls`` built like ``model`` with its weights and its mode: ``trapped(tiny_model(0), ModeTrapGPT)``."""
    trap = cls(model.cfg, **kwargs)
    trap.load_state_dict(model.state_dict())
    return trap.train(model.training)
