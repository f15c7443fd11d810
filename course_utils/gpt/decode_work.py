"""The work of generating one token, with and without a KV cache, counted rather than timed.

Covers ``decode_step_work(cfg, pos, use_cache)``: the multiply-adds a GPT spends to produce the
token after position ``pos`` (the sequence then holds ``pos + 1`` tokens), split into the attention
projections (Q, K, V and W_O), the attention scores (q·k), the mixing (pattern × V), the MLP and the
unembedding, plus how many key/value rows it computes. Without the cache the model reruns its whole
window of ``min(pos + 1, n_ctx)`` tokens (as ``generate(use_cache=False)`` does, unembedding every
position); with it, only the newest token, whose query meets every cached key. Attention is counted
as the dense square the readable code computes (the causal mask zeroes half of it afterwards).
``decode_step_work(GPTConfig(d_model=8, n_heads=2, n_layers=1, d_vocab=10), 0, True)["kv_rows"]`` -> 1.
Leaves out softmax, norms, biases and activations (a few per element, not per multiply-add), memory
traffic, and a cache that slides past n_ctx.
"""

from __future__ import annotations

from course_utils.gpt.config import GPTConfig
from course_utils.validate import int_in

PARTS = ("projections", "scores", "mixing", "mlp", "unembed")


def decode_step_work(cfg: GPTConfig, pos: int, use_cache: bool) -> dict[str, int]:
    """Multiply-adds (and ``kv_rows``, key/value rows computed) to sample the token after position ``pos``.

    ``n_new`` rows go through every matrix: the whole window without the cache, one row with it; each
    of them scores ``n_keys = min(pos + 1, n_ctx)`` keys (the window's own, or the cached ones).
    """
    if not isinstance(cfg, GPTConfig):
        raise TypeError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
    int_in("pos", pos, 0, cfg.n_ctx - 1, high_name="n_ctx - 1")
    if not isinstance(use_cache, bool):
        raise TypeError(f"use_cache must be a bool, got {type(use_cache).__name__}")
    n_keys = pos + 1
    n_new = 1 if use_cache else n_keys
    d, layers = cfg.d_model, cfg.n_layers
    work = {
        "projections": layers * n_new * 4 * d * d,  # W_Q, W_K, W_V and W_O, every head at once
        "scores": layers * n_new * n_keys * d,  # q·k for every head: n_heads x d_head = d_model
        "mixing": layers * n_new * n_keys * d,  # pattern x V
        "mlp": layers * n_new * 2 * d * cfg.d_mlp,
        "unembed": n_new * d * cfg.d_vocab,
    }
    work["total"] = sum(work.values())
    work["kv_rows"] = layers * n_new  # rows of K (and as many of V) computed, per layer summed
    return work
