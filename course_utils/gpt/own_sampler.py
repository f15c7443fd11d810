"""Sampling with the student's own parts: their ``SmallGPT`` (which attends through their ``kv_cache_step``),
loaded with a trained model's weights, driven by their ``sample_with_cache``, each where its check passed.

Covers ``SAMPLER_PARTS`` (``kv_cache_step``, ``model``, ``sample_with_cache``, what the summary calls each),
``assemble_sampler`` (the student's part where its verdict passed, the course's where not: ``CachedGPT`` for
the model, ``cached_sample`` for the loop; the student's model also needs their ``kv_cache_step`` to have
passed, since every attention call runs it) and ``OwnSampler`` (``summary()``, one line in the capstone's
words, and ``sample()``, in eval mode without gradients). Notebook 11 says which parts drew its text; a wrong
cache step makes the line name it and the course's model draw instead. Leaves out training (``capstone``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import torch
from torch import nn

from course_utils.gpt.capstone import NOT_PASSED, passed, student_model, summary_line
from course_utils.gpt.layer_cache import CachedGPT, cached_sample
from course_utils.gpt.model import GPT

SAMPLER_PARTS = {"kv_cache_step": "cache step", "model": "model", "sample_with_cache": "sampler"}


@dataclass
class OwnSampler:
    """What ``assemble_sampler`` built: the model and the loop to sample with, and whose each is (``yours``)."""

    model: nn.Module
    loop: Callable
    yours: dict
    why_not: dict

    def summary(self) -> str:
        """One line: ``'all parts yours: cache step, model, sampler'``, or which are the course's, why."""
        return summary_line(SAMPLER_PARTS, self.yours, self.why_not)

    def sample(self, prompt, n_new: int, temperature: float, generator: torch.Generator | None = None):
        """The prompt and ``n_new`` tokens from ``loop(model, prompt, n_new, temperature, generator)``, in eval mode."""
        self.model.eval()
        with torch.no_grad():
            return self.loop(self.model, prompt, n_new, temperature, generator)


def assemble_sampler(parts: Mapping, verdicts: Mapping, trained: GPT) -> OwnSampler:
    """``parts[p]`` where ``verdicts[p]`` passed (a ``Verdict`` or a bool), else the course's; the model carries
    ``trained``'s weights (on its device). ``parts``/``verdicts`` are keyed by ``SAMPLER_PARTS``."""
    if not isinstance(trained, GPT):
        raise TypeError(f"trained must be a course GPT, got {type(trained).__name__}")
    yours = {p: passed(verdicts.get(p)) and callable(parts.get(p)) for p in SAMPLER_PARTS}
    why_not = {p: "" if yours[p] else NOT_PASSED for p in SAMPLER_PARTS}
    model = None
    if not yours["kv_cache_step"]:  # the student's model runs it at every attention call: named as the cause
        yours["model"], why_not["model"] = False, "it attends through your kv_cache_step, whose check has not passed"
    elif yours["model"]:
        model, why_not["model"] = student_model(parts["model"], trained.cfg, trained)
        yours["model"] = model is not None
    if model is None:
        model = CachedGPT(trained.cfg)
        model.load_state_dict(trained.state_dict())
    device = trained.W_E.device
    loop = parts["sample_with_cache"] if yours["sample_with_cache"] else cached_sample
    return OwnSampler(model.to(device), loop, yours, why_not)
