"""What notebook 12's module exercises share (``RotaryAttention``, ``LlamaBlock``, ``Llama``): seeded
course weights, loading them into the student's module by name, and running a sequence in chunks.

Every weight of the course module is drawn again (gains 1 + 0.3 · noise, so a swapped or missing
RMSNorm shows; matrices normal with std 1/sqrt(fan-in); the embedding normal with std 1) and kept in
float64. A module whose parameters do not match those names and shapes gets one line naming what
differs (``gpt.config.check_state_dict``), returned as a ``weights.convention_answer`` so the grader
brings the same FAILED verdict back. ``chunks`` say how a sequence is fed: ``(7,)`` is one call on all
seven positions, ``(4, 1, 2)`` a prefix of four, then one position, then two, each call given the
cache the one before returned, which is how a cache's offset and mask are tested.
"""

from __future__ import annotations

import torch
from torch import nn

from course_utils.checks.weights import convention_answer, load_course_state


def seeded_state(module: nn.Module, seed: int) -> dict[str, torch.Tensor]:
    """New random values for every parameter of the course's ``module``, as a float64 state dict."""
    gen = torch.Generator().manual_seed(seed)
    state = {}
    for name, p in module.named_parameters():
        noise = torch.randn(p.shape, generator=gen, dtype=torch.float64)
        if p.ndim == 1:
            state[name] = 1 + 0.3 * noise  # RMSNorm gains, away from 1
        elif name == "W_E":
            state[name] = noise  # token vectors of RMS about 1, so RMSNorm's eps matters as it does in a model
        else:
            state[name] = noise / p.shape[-2] ** 0.5  # (…, fan-in, fan-out): outputs of about the inputs' size
    return state


def spans(chunks: tuple[int, ...]) -> list[slice]:
    """``(4, 1, 2)`` -> slices 0:4, 4:5, 5:7 of the position axis."""
    out, start = [], 0
    for n in chunks:
        out.append(slice(start, start + n))
        start += n
    return out


def run_layer(cls, case):
    """A layer exercise's ``run``: ``cls(*args, **kwargs)`` of the case, its weights loaded, the sequence
    fed in chunks, each call given the keys and values the last one returned.

    The answer: the outputs of every position, and the shapes of the keys and values after each call
    (a cache keeps ``n_kv_heads`` heads; what it holds in them is the module's own business)."""
    args, kwargs, state, x, chunks = case.args
    module = cls(*args, **kwargs)
    problem = load_course_state(module, state, "course_utils.llama")
    if problem is not None:
        return convention_answer(problem)
    outs, shapes, k, v = [], [], None, None
    with torch.no_grad():
        for span in spans(chunks):
            out, k, v = module(x[:, span], k, v)
            outs.append(out)
            shapes.append((tuple(k.shape), tuple(v.shape)))
    return torch.cat(outs, dim=1), shapes
