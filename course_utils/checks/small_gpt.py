"""Checks for notebook 09 (a small GPT): LayerNorm, a pre-norm block's forward, the next-token loss
from logits, the sampling loop, and one KV-cache attention step.

References come from the library (``layernorm``, ``gpt``, ``training``, ``generation``); models in
the cases are tiny and seeded. The accepted alternatives and typical mistakes live in
``_small_gpt_banks``.
"""

from __future__ import annotations

import torch

from course_utils.checks import _small_gpt_banks as banks
from course_utils.checks.core import Case, Exercise, Mistake
from course_utils.generation import cached_attention, generate
from course_utils.gpt import GPT, GPTConfig
from course_utils.layernorm import layer_norm as _layer_norm
from course_utils.masking import causal_mask
from course_utils.training import sequence_loss

F64 = torch.float64
WORKED_LOGITS = torch.tensor([6.2, 4.9, 2.1, 1.0])  # CAT, DOG, IS, LOVELY


def tiny_model(seed: int, d_vocab: int = 23, n_ctx: int = 12) -> GPT:
    """A seeded 2-layer GPT whose weights are moved off the init, so every parameter matters."""
    gen = torch.Generator().manual_seed(100 + seed)
    model = GPT(GPTConfig(d_vocab=d_vocab, n_ctx=n_ctx, d_model=16, n_heads=2, n_layers=2))
    model.reset_parameters(gen)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen))
    return model.eval()


# -- LayerNorm ------------------------------------------------------------------------------------
def layer_norm(x, w, b, eps=1e-5):
    """Reference: (x - mean) / sqrt(var + eps) * w + b over the last axis, var dividing by d_model."""
    return _layer_norm(x, w, b, eps)


def _ln_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=F64)  # noqa: E731
    return [
        Case(
            "the worked example [2, 4, 6, 8], w = 1, b = 0",
            (torch.tensor([2.0, 4.0, 6.0, 8.0], dtype=F64), torch.ones(4, dtype=F64), torch.zeros(4, dtype=F64)),
        ),
        Case(
            "a batch of 3 sequences of 5 positions, d_model 8, learned w and b", (rand(3, 5, 8), 1 + rand(8), rand(8))
        ),
        Case("tiny spread (eps matters)", (1e-3 * rand(4, 6), 1 + rand(6), rand(6))),
    ]


LAYER_NORM = Exercise(
    name="layer_norm",
    reference=layer_norm,
    cases=_ln_cases,
    mistakes=[
        Mistake(
            "unbiased variance",
            banks.ln_unbiased,
            "LayerNorm's variance divides by d_model (the mean of the squared deviations), not d_model - 1: "
            "torch.var does the latter unless told otherwise",
        ),
        Mistake(
            "no scale and shift",
            banks.ln_no_affine,
            "after normalising, multiply by w and add b (the learned scale and shift)",
        ),
        Mistake(
            "divided by the variance",
            banks.ln_divide_by_variance,
            "divide by the standard deviation (the square root of variance + eps), not the variance",
        ),
        Mistake(
            "statistics over the batch",
            banks.ln_over_batch,
            "take the mean and variance over each vector's own d_model numbers (the last axis); "
            "across the batch is batch norm",
        ),
        Mistake(
            "eps outside the square root",
            banks.ln_eps_outside,
            "eps goes inside the square root: sqrt(variance + eps); it matters when a vector's spread is tiny",
        ),
    ],
    alternatives=banks.LAYER_NORM_ALTERNATIVES,
    hints=[
        "Work on the last axis only, keeping it (keepdim) so the statistics broadcast back over the vector. "
        "Centre first, then scale to unit spread, then apply the learned scale and shift.",
        "The variance is the mean of the squared centred values (divide by d_model, not d_model - 1); the spread is "
        "the square root of variance plus eps.",
    ],
)


# -- a block's forward ----------------------------------------------------------------------------
def block_forward(block, x):
    """Reference: pre-norm, causal. ``x + attn(ln1(x))``, then that plus ``mlp(ln2(that))``."""
    h = x + block.attn(block.ln1(x), mask=causal_mask(x.shape[1], device=x.device))
    return h + block.mlp(block.ln2(h))


def _block_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    block = tiny_model(seed).blocks[0]
    return [
        Case("one block, 2 sequences of 6 positions, d_model 16", (block, torch.randn(2, 6, 16, generator=gen))),
        Case(
            "the second block, 1 sequence of 9 positions",
            (tiny_model(seed).blocks[1], torch.randn(1, 9, 16, generator=gen)),
        ),
    ]


BLOCK_FORWARD = Exercise(
    name="block_forward",
    reference=block_forward,
    cases=_block_cases,
    mistakes=[
        Mistake(
            "no residual",
            banks.block_no_residual,
            "each sub-layer's output is ADDED to the stream it read: keep x + ...",
        ),
        Mistake(
            "post-norm",
            banks.block_post_norm,
            "this is post-norm (normalise after adding); "
            "the block here is pre-norm: normalise the input of each sub-layer",
        ),
        Mistake(
            "parallel sub-layers",
            banks.block_parallel,
            "the MLP reads the stream after attention has written to it (ln2 of x + attention), not the block's input",
        ),
        Mistake(
            "no causal mask",
            banks.block_no_mask,
            "pass a causal mask to the attention: a position must not see later ones",
        ),
        Mistake("one LayerNorm for both", banks.block_one_norm, "the MLP has its own LayerNorm, ln2"),
    ],
    alternatives=banks.BLOCK_ALTERNATIVES,
    hints=[
        "Two steps, the same shape each time: read the stream through a LayerNorm, "
        "run the sub-layer, add the result back.",
        "Attention gets the mask from causal_mask(pos); "
        "the second step starts from the stream the first step produced and uses ln2.",
    ],
)


# -- next-token loss ------------------------------------------------------------------------------
def next_token_loss(logits, tokens):
    """Reference: position i's logits are scored on token i + 1; the mean over every scored position."""
    return sequence_loss(logits[:, :-1], tokens[:, 1:])


def _loss_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    worked = torch.stack([WORKED_LOGITS, torch.randn(4, generator=gen)])[None]  # (1, 2, 4): row 0 predicts token 1
    return [
        Case(
            "YOUR CAT IS A LOVELY -> CAT (vocabulary CAT, DOG, IS, LOVELY)", (worked.double(), torch.tensor([[3, 0]]))
        ),
        Case(
            "2 sequences of 7 tokens, vocabulary 11",
            (torch.randn(2, 7, 11, generator=gen, dtype=F64), torch.randint(0, 11, (2, 7), generator=gen)),
        ),
    ]


NEXT_TOKEN_LOSS = Exercise(
    name="next_token_loss",
    reference=next_token_loss,
    cases=_loss_cases,
    mistakes=[
        Mistake(
            "no shift",
            banks.loss_no_shift,
            "position i predicts the NEXT token, so drop the last position's logits and the first target "
            "(yours scores each token against itself)",
        ),
        Mistake(
            "shifted the wrong way",
            banks.loss_shift_backwards,
            "the shift goes the other way: drop the LAST position's logits and the FIRST token",
        ),
        Mistake("sum", banks.loss_sum, "average over the scored positions; a sum grows with the batch and the length"),
        Mistake(
            "probability, not log",
            banks.loss_probabilities,
            "the loss is minus the LOG of the right token's probability",
        ),
    ],
    alternatives=banks.LOSS_ALTERNATIVES,
    hints=[
        "Each position's logits are a guess about the token after it, so the last position has nothing to be scored on "
        "and the first token is never a target.",
        "Slice both tensors so they line up, flatten batch and position into rows, then take the cross-entropy.",
    ],
)


# -- the sampling loop ----------------------------------------------------------------------------
def sample_tokens(model, prompt, n_new, temperature, generator):
    """Reference: ``generation.generate`` without the cache (crop to the last n_ctx tokens, last row's logits)."""
    return generate(model, prompt, n_new, temperature=temperature, generator=generator, use_cache=False)


def _sample_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    model = tiny_model(seed)
    return [
        Case(
            "2 prompts of 4 tokens, 5 new, temperature 1",
            (model, torch.randint(0, 23, (2, 4), generator=gen), 5, 1.0, seed),
        ),
        Case(
            "temperature 0 (greedy), past the context of 12",
            (model, torch.randint(0, 23, (1, 10), generator=gen), 6, 0.0, seed),
        ),
    ]


def _run_sampler(impl, case: Case):
    """The last argument of a case is a seed: each call gets a fresh generator seeded with it."""
    *args, seed = case.args
    return impl(*args, torch.Generator().manual_seed(seed))


SAMPLE_TOKENS = Exercise(
    name="sample_tokens",
    reference=sample_tokens,
    cases=_sample_cases,
    tolerance="exact",
    run=_run_sampler,
    mistakes=[
        Mistake(
            "only the last token",
            banks.sample_last_token_only,
            "feed the model the whole sequence so far (its last n_ctx tokens), not only the newest token",
        ),
        Mistake(
            "first position's logits",
            banks.sample_first_position,
            "the next token comes from the LAST position's logits ([:, -1]); position 0 predicts the second token",
        ),
        Mistake(
            "always greedy",
            banks.sample_always_greedy,
            "draw a sample from the temperature-scaled distribution (notebook 04's sampler, "
            "with the generator you were given); argmax ignores the temperature",
        ),
    ],
    alternatives=banks.SAMPLE_ALTERNATIVES,
    hints=[
        "Each step: run the model on what you have (at most the last n_ctx tokens), keep only the logits of the last "
        "position, draw one token per row, append it.",
        "Crop with ids[:, -n_ctx:], take [:, -1], draw with "
        "sample_next_token(..., generator=generator), and concatenate "
        "the new column on dim 1.",
    ],
)


# -- the KV-cache step ----------------------------------------------------------------------------
def kv_cache_step(q, k_new, v_new, k_cache, v_cache):
    """Reference: ``generation.cached_attention`` -> (z, k_all, v_all)."""
    return cached_attention(q, k_new, v_new, k_cache, v_cache)


def _kv_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=gen)  # noqa: E731
    return [
        Case(
            "one new token after 5 cached (batch 2, 3 heads, d_head 8)",
            (rand(2, 3, 1, 8), rand(2, 3, 1, 8), rand(2, 3, 1, 8), rand(2, 3, 5, 8), rand(2, 3, 5, 8)),
        ),
        Case(
            "3 new tokens after 4 cached",
            (rand(1, 2, 3, 4), rand(1, 2, 3, 4), rand(1, 2, 3, 4), rand(1, 2, 4, 4), rand(1, 2, 4, 4)),
        ),
    ]


KV_CACHE_STEP = Exercise(
    name="kv_cache_step",
    reference=kv_cache_step,
    cases=_kv_cases,
    mistakes=[
        Mistake(
            "cache not used",
            banks.kv_no_append,
            "the new queries must attend to the cached keys too: concatenate first, then attend",
        ),
        Mistake(
            "new keys first",
            banks.kv_new_first,
            "append the new keys and values AFTER the cached ones (positions stay in order)",
        ),
        Mistake("no scaling", banks.kv_no_scale, "divide the scores by sqrt(d_head), as in every attention"),
        Mistake(
            "mask from the top-left",
            banks.kv_top_left_mask,
            "the new queries are the LAST positions: query i may see keys up to "
            "n_cached + i (causal_mask(n_new, n_all))",
        ),
    ],
    alternatives=banks.KV_ALTERNATIVES,
    hints=[
        "The cache grows along the position axis (dim 2 of (batch, head, pos, d_head)); "
        "the queries are only the new positions.",
        "k_all = cat(k_cache, k_new) on dim 2 (same for v); the mask is causal_mask(n_new, n_all), "
        "whose rows are the last "
        "n_new positions; then ordinary scaled dot-product attention.",
    ],
)

EXERCISES = {ex.name: ex for ex in (LAYER_NORM, BLOCK_FORWARD, NEXT_TOKEN_LOSS, SAMPLE_TOKENS, KV_CACHE_STEP)}


def check_layer_norm(fn):
    """Check a student's ``layer_norm(x, w, b, eps=1e-5)``."""
    return LAYER_NORM.check(fn)


def check_block_forward(fn):
    """Check a student's ``block_forward(block, x)``."""
    return BLOCK_FORWARD.check(fn)


def check_next_token_loss(fn):
    """Check a student's ``next_token_loss(logits, tokens)``."""
    return NEXT_TOKEN_LOSS.check(fn)


def check_sample_tokens(fn):
    """Check a student's ``sample_tokens(model, prompt, n_new, temperature, generator)``."""
    return SAMPLE_TOKENS.check(fn)


def check_kv_cache_step(fn):
    """Check a student's ``kv_cache_step(q, k_new, v_new, k_cache, v_cache)``."""
    return KV_CACHE_STEP.check(fn)
