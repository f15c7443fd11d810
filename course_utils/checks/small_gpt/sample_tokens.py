"""Exercise ``sample_tokens(model, prompt, n_new, temperature, generator)``: the sampling loop, without a cache.

Required form (stated in the notebook): ``prompt`` (batch, pos) token ids; return (batch, pos + n_new).
Each step runs the model on at most its last ``model.cfg.n_ctx`` tokens and draws one token per row
with ``sample_next_token(logits, temperature, generator=generator)``, so the draws match the check's
(compared exactly; every call gets a fresh generator seeded the same way).
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.small_gpt._cases import tiny_model
from course_utils.gpt.generation import generate
from course_utils.sampling import sample_next_token


def sample_tokens(model, prompt, n_new, temperature, generator):
    """Reference: ``generation.generate`` without the cache (crop to the last n_ctx tokens, last row's logits)."""
    return generate(model, prompt, n_new, temperature=temperature, generator=generator, use_cache=False)


def _sample_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    model = tiny_model(seed)
    return [
        Case(  # sampled, not greedy, past the context: a crop from the wrong end or by one too many shows here
            "2 prompts of 8 tokens, 10 new, temperature 0.7, past the context of 12",
            (model, torch.randint(0, 23, (2, 8), generator=gen), 10, 0.7, seed),
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


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "only the last token", "feed the model the whole sequence so far (its last n_ctx tokens), not only the newest token"
)
def sample_last_token_only(model, prompt, n_new, temperature, generator):
    ids = prompt.clone()
    for _ in range(n_new):
        logits = model(ids[:, -1:])[:, -1]
        ids = torch.cat([ids, sample_next_token(logits, temperature, generator=generator)[:, None]], dim=1)
    return ids


@bank.mistake(
    "first position's logits",
    "the next token comes from the LAST position's logits ([:, -1]); position 0 predicts the second token",
)
def sample_first_position(model, prompt, n_new, temperature, generator):
    ids = prompt.clone()
    for _ in range(n_new):
        logits = model(ids[:, -model.cfg.n_ctx :])[:, 0]
        ids = torch.cat([ids, sample_next_token(logits, temperature, generator=generator)[:, None]], dim=1)
    return ids


@bank.mistake(
    "always greedy",
    "draw a sample from the temperature-scaled distribution (notebook 04's sampler, "
    "with the generator you were given); argmax ignores the temperature",
)
def sample_always_greedy(model, prompt, n_new, temperature, generator):
    ids = prompt.clone()
    for _ in range(n_new):
        logits = model(ids[:, -model.cfg.n_ctx :])[:, -1]
        ids = torch.cat([ids, logits.argmax(-1, keepdim=True)], dim=1)
    return ids


@bank.mistake(
    "cropped the wrong end",
    "past n_ctx tokens, keep the LAST n_ctx (ids[:, -n_ctx:]): the model must see the most recent tokens, "
    "not the oldest ones",
)
def sample_first_n_ctx(model, prompt, n_new, temperature, generator):
    ids = prompt.clone()
    for _ in range(n_new):
        logits = model(ids[:, : model.cfg.n_ctx])[:, -1]
        ids = torch.cat([ids, sample_next_token(logits, temperature, generator=generator)[:, None]], dim=1)
    return ids


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("new tokens in a list, joined at the end")
def _sample_list(model, prompt, n_new, temperature, generator):
    new = []  # one (batch, 1) tensor per step, joined once at the end
    for _ in range(n_new):
        window = torch.cat([prompt, *new], dim=1)[:, -model.cfg.n_ctx :]
        new.append(sample_next_token(model(window)[:, -1], temperature, generator=generator)[:, None])
    return torch.cat([prompt, *new], dim=1)


@bank.alternative("preallocated output")
def _sample_preallocated(model, prompt, n_new, temperature, generator):
    out = torch.zeros(prompt.shape[0], prompt.shape[1] + n_new, dtype=torch.long)
    out[:, : prompt.shape[1]] = prompt
    for end in range(prompt.shape[1], out.shape[1]):
        logits = model(out[:, max(0, end - model.cfg.n_ctx) : end])
        out[:, end] = sample_next_token(logits[:, -1], temperature, generator=generator)
    return out


@bank.alternative("a while loop")
def _sample_while(model, prompt, n_new, temperature, generator):
    ids, n_ctx = prompt, model.cfg.n_ctx
    while ids.shape[1] < prompt.shape[1] + n_new:
        start = max(0, ids.shape[1] - n_ctx)
        nxt = sample_next_token(model(ids[:, start:])[:, -1, :], temperature, generator=generator)
        ids = torch.cat((ids, nxt.unsqueeze(1)), dim=1)
    return ids


SAMPLE_TOKENS = Exercise(
    name="sample_tokens",
    reference=sample_tokens,
    cases=_sample_cases,
    tolerance="exact",
    run=_run_sampler,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Each step: run the model on what you have (at most the last n_ctx tokens), keep only the logits of the last "
        "position, draw one token per row, append it.",
        "Crop with ids[:, -n_ctx:], take [:, -1], draw with "
        "sample_next_token(..., generator=generator), and concatenate "
        "the new column on dim 1.",
    ],
)
EXERCISES = {SAMPLE_TOKENS.name: SAMPLE_TOKENS}


def check_sample_tokens(fn):
    """Check a student's ``sample_tokens(model, prompt, n_new, temperature, generator)``."""
    return SAMPLE_TOKENS.check(fn)
