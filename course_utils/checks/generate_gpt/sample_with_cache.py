"""Exercise ``sample_with_cache(model, prompt, n_new, temperature, generator)``: the sampling loop with a KV cache.

Required form (stated in the notebook): ``model`` is called as ``model(tokens, cache)`` (the student's own
``SmallGPT``, or ``layer_cache.CachedGPT``) with ``cache`` one ``LayerCache`` per block (``new_cache``);
``prompt`` (batch, pos) token ids with pos + n_new - 1 <= n_ctx; return (batch, pos + n_new). The prompt goes
through the model once, then each sampled token alone with the same cache; every token is drawn with
``sample_next_token(logits, temperature, generator=generator)`` from the last position's logits, so the
tokens equal ``layer_cache.cached_sample``'s, ``generate``'s and the uncached loop's (compared exactly; every
call gets a fresh generator seeded the same way). The model is a ``_traps.TokenBudgetGPT`` allowed prompt +
n_new - 1 positions in all, so an answer that re-runs the sequence instead of using the cache draws other tokens.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import tiny_model
from course_utils.checks.traps import TokenBudgetGPT, trapped
from course_utils.gpt.layer_cache import LayerCache, cached_sample, new_cache
from course_utils.sampling import sample_next_token


def sample_with_cache(model, prompt, n_new, temperature, generator):
    """Reference: ``layer_cache.cached_sample`` (``generate``'s tokens)."""
    return cached_sample(model, prompt, n_new, temperature, generator)


def _cached_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    model = tiny_model(seed)
    return [
        Case(  # 5 + 8 - 1 = 12 positions: the context exactly, so feeding the last token back is an error
            "2 prompts of 5 tokens, 8 new (the whole context of 12), temperature 0.8",
            (_budgeted(model, 5, 8), torch.randint(0, 23, (2, 5), generator=gen), 8, 0.8, seed),
        ),
        Case("1 prompt of 3 tokens, 6 new, temperature 0 (greedy)",
             (_budgeted(model, 3, 6), torch.randint(0, 23, (1, 3), generator=gen), 6, 0.0, seed)),
    ]


def _budgeted(model, n_prompt: int, n_new: int) -> TokenBudgetGPT:
    """``model`` allowed the prompt once and each new token but the last: re-feeding the sequence overruns it."""
    return trapped(model, TokenBudgetGPT, budget=n_prompt + n_new - 1)


def _run_sampler(impl, case: Case):
    """The last argument of a case is a seed: each call gets a fresh generator seeded with it."""
    *args, seed = case.args
    return impl(*args, torch.Generator().manual_seed(seed))


def _loop(model, prompt, n_new, pick, keep_cache=True):
    """A cached loop with knobs for the mistakes: ``pick(logits)`` chooses each token."""
    cache = new_cache(model.cfg.n_layers)
    logits = model(prompt, cache)
    ids = prompt
    for i in range(n_new):
        token = pick(logits)
        ids = torch.cat([ids, token[:, None]], dim=1)
        if i < n_new - 1:
            logits = model(token[:, None], cache if keep_cache else new_cache(model.cfg.n_layers))
    return ids


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "cache not passed on",
    "give every step the same cache, the one the prompt filled: with a new one the new token is read as position 0 "
    "with nothing before it",
)
def cached_no_cache(model, prompt, n_new, temperature, generator):
    return _loop(model, prompt, n_new, lambda lg: sample_next_token(lg[:, -1], temperature, generator=generator),
                 keep_cache=False)


@bank.mistake(
    "the cache never used",
    "run the prompt through the model once, then only each new token with the cache: re-running the whole "
    "sequence every step gives the same tokens at many times the work (the check's model counts the positions it "
    "runs on)",
)
def cached_refeed(model, prompt, n_new, temperature, generator):
    ids = prompt
    for _ in range(n_new):
        logits = model(ids, new_cache(model.cfg.n_layers))  # a fresh cache every step: the sequence again
        ids = torch.cat([ids, sample_next_token(logits[:, -1], temperature, generator=generator)[:, None]], dim=1)
    return ids


@bank.mistake(
    "first position's logits",
    "after the prompt, the next token comes from the LAST position's logits ([:, -1])",
)
def cached_first_position(model, prompt, n_new, temperature, generator):
    return _loop(model, prompt, n_new, lambda lg: sample_next_token(lg[:, 0], temperature, generator=generator))


@bank.mistake(
    "always greedy",
    "draw each token from the temperature-scaled distribution with notebook 04's sampler and the generator you "
    "were given; argmax ignores the temperature",
)
def cached_greedy(model, prompt, n_new, temperature, generator):
    return _loop(model, prompt, n_new, lambda lg: lg[:, -1].argmax(-1))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("preallocated output")
def _cached_preallocated(model, prompt, n_new, temperature, generator):
    n_prompt = prompt.shape[1]
    out = torch.zeros(prompt.shape[0], n_prompt + n_new, dtype=torch.long)
    out[:, :n_prompt] = prompt
    cache = [LayerCache() for _ in model.blocks]
    logits = model(prompt, cache)
    for end in range(n_prompt, n_prompt + n_new):
        out[:, end] = sample_next_token(logits[:, -1], temperature, generator=generator)
        if end + 1 < out.shape[1]:
            logits = model(out[:, end : end + 1], cache)
    return out


@bank.alternative("the prompt fed one token at a time")
def _cached_token_by_token(model, prompt, n_new, temperature, generator):
    cache, ids = new_cache(model.cfg.n_layers), prompt
    for i in range(prompt.shape[1] + n_new - 1):
        logits = model(ids[:, i : i + 1], cache)
        if i >= prompt.shape[1] - 1:  # past the prompt: sample from the newest logits
            nxt = sample_next_token(logits[:, -1], temperature, generator=generator)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
    return ids


@bank.alternative("new tokens in a list, a while loop")
def _cached_list(model, prompt, n_new, temperature, generator):
    cache = new_cache(model.cfg.n_layers)
    logits = model(prompt, cache=cache)
    new = []
    while True:
        new.append(sample_next_token(logits[:, -1], temperature, generator=generator).unsqueeze(1))
        if len(new) == n_new:
            return torch.cat([prompt, *new], dim=1)
        logits = model(new[-1], cache=cache)


SAMPLE_WITH_CACHE = Exercise(
    name="sample_with_cache",
    reference=sample_with_cache,
    cases=_cached_cases,
    tolerance="exact",
    run=_run_sampler,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Run the whole prompt once to fill the cache; after that, each step runs the model on the one token it just "
        "drew, and the cache supplies everything before it.",
        "Make one cache (a LayerCache per block) before the loop and pass that same list to every model call: the "
        "model fills it as it goes. The token drawn last never needs to go through the model, and feeding it would "
        "pass the context in the check's first case.",
    ],
)
EXERCISES = {SAMPLE_WITH_CACHE.name: SAMPLE_WITH_CACHE}


def check_sample_with_cache(fn):
    """Check a student's ``sample_with_cache(model, prompt, n_new, temperature, generator)``."""
    return SAMPLE_WITH_CACHE.check(fn)
