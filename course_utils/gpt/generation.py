"""Generating text with the small GPT: the sampling loop, with or without a KV cache.

Covers ``generate`` (run the model, turn the last position's logits into the next token with
notebook 04's ``sample_next_token``: greedy at temperature 0, else temperature, top-k, top-p; append;
repeat) and ``forward_with_cache`` (the model run on new tokens only, reusing every earlier
position's K and V). Both take ``impl``: ``"reference"`` runs the readable cache of ``kv_cache.py``,
``"fused"`` the fast one of ``kv_cache_fused.py`` (Q, K and V in one matmul, PyTorch's SDPA, K and V
written in place into buffers allocated once, the weights gathered once per call and the checks
done once in ``generate``); the tokens are the same (tested).
``generate(model, ids, 20, temperature=0)`` -> the prompt and 20 greedy tokens.
Leaves out beam search, batched prompts of different lengths and a cache that slides past n_ctx.
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Int
from torch import Tensor

from course_utils.gpt.model import GPT
from course_utils.gpt.config import check_tokens
from course_utils.gpt.kv_cache import KVCache, _reference_step
from course_utils.gpt.kv_cache_fused import _buffers_for, _Buffers, _final_logits, _fused_cached_blocks, _fused_layers
from course_utils.sampling import sample_next_token


def _check_cache_args(model: GPT, impl: str) -> None:
    if impl not in ("reference", "fused"):
        raise ValueError(f"impl must be 'reference' or 'fused', got {impl!r}")
    if model.cfg.norm != "pre":
        raise ValueError("forward_with_cache is written for pre-norm models")


def _context_error(start: int, n_new: int, n_ctx: int) -> ValueError:
    return ValueError(
        f"the cache holds {start} positions and {n_new} more would pass the context "
        f"n_ctx={n_ctx}; generate with use_cache=False to slide the window"
    )


@torch.no_grad()
def forward_with_cache(
    model: GPT, tokens: Int[Tensor, "batch n_new"], cache: KVCache | None = None, impl: str = "reference"
):
    """Logits for ``tokens`` placed after the ``cache.length`` positions already cached; returns ``(logits, cache)``.

    ``impl="fused"`` runs the same step through PyTorch's kernels (one matmul for Q, K and V, SDPA)
    and writes the new keys and values into buffers allocated ahead instead of concatenating.
    """
    _check_cache_args(model, impl)
    cache = KVCache() if cache is None else cache
    start = cache.length
    tokens = check_tokens(tokens, model.cfg)
    batch, n_new = tokens.shape
    if start + n_new > model.cfg.n_ctx:
        raise _context_error(start, n_new, model.cfg.n_ctx)
    if start and cache.keys[0].shape[0] != batch:
        raise ValueError(f"the cache holds {cache.keys[0].shape[0]} sequences but tokens has {batch} rows")
    if impl == "reference":
        return _reference_step(model, tokens, cache)
    x = model.embed(tokens, start=start)  # (batch, n_new, d_model)
    buffers = _buffers_for(model, cache, batch, start + n_new, x)
    x = _fused_cached_blocks(_fused_layers(model), x, buffers, start, model.cfg.n_heads)
    return _final_logits(model, x), buffers.view(start + n_new)


def _check_generation_args(max_new_tokens, temperature) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 means greedy), got {temperature}")


def generate(
    model: GPT,
    prompt: Int[Tensor, "batch pos"],
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
    impl: str = "reference",
) -> Int[Tensor, "batch total"]:
    """The prompt followed by ``max_new_tokens`` sampled tokens: ``generate(model, ids, 20, temperature=0)`` is greedy.

    Without the cache every step reruns the model on the last n_ctx tokens; with it, on the new one only.
    ``impl`` picks the readable or the fused kernels for both. The arguments are checked once, here
    (the steps then run on tokens the model made itself), and the loop runs in ``torch.inference_mode``.
    """
    _check_generation_args(max_new_tokens, temperature)
    tokens = check_tokens(prompt, model.cfg)
    if use_cache:
        _check_cache_args(model, impl)
    elif impl not in ("reference", "fused"):
        raise ValueError(f"impl must be 'reference' or 'fused', got {impl!r}")
    if max_new_tokens == 0:
        return tokens
    n_prompt, n_ctx = tokens.shape[1], model.cfg.n_ctx
    if use_cache and n_prompt + max_new_tokens - 1 > n_ctx:  # the last new token is sampled, never fed back
        raise ValueError(
            f"the prompt ({n_prompt} tokens) and {max_new_tokens} new tokens need "
            f"{n_prompt + max_new_tokens - 1} cached positions, more than the context n_ctx={n_ctx}; "
            "generate with use_cache=False to slide the window"
        )
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            out = _sampling_loop(
                model,
                tokens,
                max_new_tokens,
                use_cache,
                impl,
                lambda logits: sample_next_token(logits, temperature, top_k, top_p, generator),
            )
    finally:
        model.train(was_training)
    return out.clone()  # an ordinary tensor again: one made in inference mode cannot be saved for a backward pass


def _sampling_loop(
    model: GPT, tokens: Int[Tensor, "batch n_prompt"], max_new_tokens: int, use_cache: bool, impl: str, sample
) -> Int[Tensor, "batch total"]:
    """``generate``'s loop on checked arguments: logits of the last position -> ``sample`` -> written into ``out``."""
    (batch, n_prompt), n_ctx = tokens.shape, model.cfg.n_ctx
    total = n_prompt + max_new_tokens
    out = torch.empty(batch, total, dtype=torch.int64, device=tokens.device)  # the prompt, then the new tokens
    out[:, :n_prompt] = tokens
    if use_cache and impl == "fused":
        layers, n_heads = _fused_layers(model), model.cfg.n_heads
        buffers = _Buffers.allocate(model, batch, total - 1, model.W_E)  # room for every position fed back

        def next_logits(start: int, end: int) -> Tensor:
            x = _fused_cached_blocks(layers, model.embed(out[:, start:end], start=start), buffers, start, n_heads)
            return _final_logits(model, x[:, -1])
    elif use_cache:
        cache = KVCache()

        def next_logits(start: int, end: int) -> Tensor:
            nonlocal cache
            logits, cache = _reference_step(model, out[:, start:end], cache)
            return logits[:, -1]
    else:

        def next_logits(start: int, end: int) -> Tensor:
            return model(out[:, max(0, end - n_ctx) : end], impl=impl)[:, -1]  # the whole window, every step

    start = 0
    for end in range(n_prompt, total):
        out[:, end] = sample(next_logits(start, end))  # (batch,) new token ids
        start = end  # with the cache, only the token just sampled is new
    return out
