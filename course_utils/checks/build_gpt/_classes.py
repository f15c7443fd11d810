"""What notebook 09's class exercises share (``CausalAttention``, ``GeluMLP``, ``TransformerBlock``,
``SmallGPT``): build the student's module from a ``GPTConfig``, load a course module's weights into it by
name, and run it: on the whole input, or fed in pieces with one cache (``layer_cache``) made for the run.

A module that cannot take the weights (a missing, extra or mis-shaped parameter) gets one line naming
what differs (``gpt_config.check_state_dict``), returned as a ``weights.convention_answer`` so the same
FAILED verdict comes back through the grader.
"""

from __future__ import annotations

import torch

from course_utils.checks.weights import convention_answer, load_course_state
from course_utils.gpt.layer_cache import LayerCache, new_cache


def course_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A course module's weights in float64, for loading into a student's module of the same layout."""
    return {name: t.detach().double().clone() for name, t in model.state_dict().items()}


def run_class(cls, case):
    """``cls(cfg)`` with the case's weights loaded, called on the case's input (no gradients).

    A case ``(cfg, state, x, pieces, n_layers)`` feeds ``x`` in pieces of ``pieces`` positions, one call each
    with the same cache made for the run (a ``LayerCache`` when ``n_layers`` is None, else ``new_cache(n_layers)``),
    and joins the outputs along the positions."""
    cfg, state, x, *fed = case.args
    module = cls(cfg)
    problem = load_course_state(module, state, "course_utils.gpt.model")
    if problem is not None:
        return convention_answer(problem)
    with torch.no_grad():
        if not fed:
            return module(x)
        (pieces, n_layers), start, outs = fed, 0, []
        cache = LayerCache() if n_layers is None else new_cache(n_layers)
        for n in pieces:
            outs.append(module(x[:, start : start + n], cache))
            start += n
        return torch.cat(outs, dim=1)
