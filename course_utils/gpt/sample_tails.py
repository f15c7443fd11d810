"""What top-k and top-p cut: the model's own probability of every token a sampler actually drew.

Covers ``sampled_probabilities``: generate with a KV cache and a given temperature / top-k / top-p,
and record, for each drawn token, the probability the *unfiltered* model gave it (softmax of the
raw logits, temperature 1). Plain sampling now and then draws a token the model thought nearly
impossible (the long tail); top-k and top-p remove those before drawing.
``sampled_probabilities(model, prompt, 10, generator=g, top_k=1)["probs"]`` -> every draw's
probability equals the largest one (top-1 is greedy).
Leaves out the filters themselves (``course_utils.sampling``) and the loop (``course_utils.gpt.generation``).
"""

from __future__ import annotations

import torch
from jaxtyping import Int
from torch import Tensor

from course_utils.gpt.generation import _check_generation_args, _sampling_loop
from course_utils.gpt.model import GPT
from course_utils.gpt.config import check_tokens
from course_utils.sampling import sample_next_token


@torch.no_grad()
def sampled_probabilities(
    model: GPT,
    prompt: Int[Tensor, "batch pos"],
    max_new_tokens: int,
    generator: torch.Generator | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> dict[str, Tensor]:
    """``{"tokens": (batch, pos + max_new_tokens), "probs": (batch, max_new_tokens)}``: the tokens drawn
    as ``generate(..., use_cache=True)`` draws them, and the unfiltered probability of each new one."""
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a course_utils.gpt.model.GPT, got {type(model).__name__}")
    _check_generation_args(max_new_tokens, temperature)
    tokens = check_tokens(prompt, model.cfg)
    if tokens.shape[1] + max_new_tokens - 1 > model.cfg.n_ctx:
        raise ValueError(
            f"the prompt ({tokens.shape[1]} tokens) and max_new_tokens={max_new_tokens} pass the context "
            f"n_ctx={model.cfg.n_ctx}"
        )
    probs = []

    def sample(logits: Tensor) -> Tensor:  # (batch, d_vocab) -> (batch,)
        chosen = sample_next_token(logits, temperature, top_k, top_p, generator)
        probs.append(logits.softmax(-1).gather(-1, chosen[:, None])[:, 0])
        return chosen

    was_training = model.training
    model.eval()
    try:
        out = _sampling_loop(model, tokens, max_new_tokens, True, "reference", sample)
    finally:
        model.train(was_training)
    empty = torch.empty(tokens.shape[0], 0, dtype=model.W_E.dtype, device=tokens.device)
    return {"tokens": out, "probs": torch.stack(probs, dim=1) if probs else empty}
