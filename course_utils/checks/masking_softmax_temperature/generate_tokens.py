"""Exercise ``generate_tokens(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id,
generator)``: the generation loop, pick a token, append it, run the model again.

Required form (stated in the notebook): ``next_token_logits(ids)`` takes the 1-d long tensor of the ids so far
and returns (pos, d_vocab) logits, of which the last row predicts the next token; the distribution is the
student's ``softmax_with_temperature`` then ``top_k_top_p_filter``; one draw per step with
``torch.multinomial(probs, 1, generator=generator)``; stop after ``max_new_tokens`` new tokens or right after
appending ``eos_id``; return prompt + new tokens as a list of ints. Compared exactly with the course's
``sampling.generate`` (each call gets a fresh generator seeded the same way, so the draws are the same).
"""

from __future__ import annotations

import torch

from course_utils import sampling
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.masking_softmax_temperature._shared import TableModel


def generate_tokens(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    """Reference: the course's ``sampling.generate``."""
    return sampling.generate(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator)


def _generate_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(1, 8, (3,), generator=gen).tolist()
    model, stopping = TableModel(8, seed), TableModel(8, seed + 1, eos_bonus=1.0)
    return [
        Case("temperature 1, no filter, 12 new tokens", (model, prompt, 12, 1.0, None, None, None, seed)),
        Case("temperature 2.5, top_p 0.6, 12 new tokens", (model, prompt[:2], 12, 2.5, None, 0.6, None, seed + 1)),
        Case("temperature 0.7, top_k 3, eos_id 0 (stops early)", (stopping, prompt, 30, 0.7, 3, None, 0, seed + 2)),
        Case("temperature 0 (greedy), top_k 2 and top_p 0.9, eos_id 0",
             (stopping, prompt[:1], 10, 0.0, 2, 0.9, 0, seed)),
    ]


def _run_generate(impl, case: Case):
    """The last argument of a case is a seed: each call gets a fresh generator seeded with it."""
    *args, seed = case.args
    return impl(*args, torch.Generator().manual_seed(seed))


def _distribution(logits, temperature, top_k, top_p):
    return sampling.next_token_distribution(logits, temperature, top_k, top_p)


def _loop(next_token_logits, prompt, max_new_tokens, eos_id, pick, *, row=-1, stop=True, eos_kept=True):
    """A written-out loop with knobs for the mistakes: which logits row, whether and how it stops."""
    ids = list(prompt)
    for _ in range(max_new_tokens):
        token = pick(next_token_logits(torch.tensor(ids))[row])
        if stop and token == eos_id and not eos_kept:
            break
        ids.append(token)
        if stop and token == eos_id:
            break
    return ids


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "first position's logits",
    "the next token is predicted by the LAST position's logits (row -1); row 0 predicts the second token",
)
def _first_row(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    def pick(logits):
        return int(torch.multinomial(_distribution(logits, temperature, top_k, top_p), 1, generator=generator))

    return _loop(next_token_logits, prompt, max_new_tokens, eos_id, pick, row=0)


@bank.mistake(
    "eos not kept", "when eos_id comes out, append it and then stop: the returned sequence ends with eos_id"
)
def _eos_dropped(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    def pick(logits):
        return int(torch.multinomial(_distribution(logits, temperature, top_k, top_p), 1, generator=generator))

    return _loop(next_token_logits, prompt, max_new_tokens, eos_id, pick, eos_kept=False)


@bank.mistake("never stops at eos", "stop as soon as the token you appended is eos_id (when eos_id is given)")
def _no_stop(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    def pick(logits):
        return int(torch.multinomial(_distribution(logits, temperature, top_k, top_p), 1, generator=generator))

    return _loop(next_token_logits, prompt, max_new_tokens, eos_id, pick, stop=False)


@bank.mistake(
    "temperature after the filters",
    "apply the temperature first, then top-k and top-p to the tempered distribution (the nucleus depends on T)",
)
def _temperature_last(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    def pick(logits):
        filtered = _distribution(logits, 1.0, top_k, top_p)
        probs = sampling.next_token_distribution(filtered.log(), temperature)
        return int(torch.multinomial(probs, 1, generator=generator))

    return _loop(next_token_logits, prompt, max_new_tokens, eos_id, pick)


@bank.mistake(
    "always the most likely token",
    "draw the token with torch.multinomial from the filtered distribution (and the generator you were given); "
    "argmax is only right at temperature 0",
)
def _always_argmax(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    return _loop(next_token_logits, prompt, max_new_tokens, eos_id, lambda logits: int(logits.argmax()))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("the course's sample_next_token for each step")
def _course_sampler(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    ids = list(prompt)
    for _ in range(max_new_tokens):
        last = next_token_logits(torch.tensor(ids))[-1]
        ids.append(int(sampling.sample_next_token(last, temperature, top_k, top_p, generator)))
        if ids[-1] == eos_id:
            break
    return ids


@bank.alternative("a growing tensor and torch.cat, float32 logits")
def _tensor_cat(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    ids = torch.as_tensor(prompt)
    for _ in range(max_new_tokens):
        probs = _distribution(next_token_logits(ids)[-1].float(), temperature, top_k, top_p)
        token = torch.multinomial(probs[None], 1, generator=generator)[0]  # a batch of one row
        ids = torch.cat([ids, token])
        if eos_id is not None and token.item() == eos_id:
            break
    return ids.tolist()


@bank.alternative("a while loop counting the new tokens")
def _while_loop(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    ids, new = [int(t) for t in prompt], 0
    while new < max_new_tokens and not (new and ids[-1] == eos_id):
        logits = next_token_logits(torch.tensor(ids))[-1]
        ids.append(torch.multinomial(_distribution(logits, temperature, top_k, top_p), 1, generator=generator).item())
        new += 1
    return ids


GENERATE_TOKENS = Exercise(
    name="generate_tokens",
    reference=generate_tokens,
    cases=_generate_cases,
    run=_run_generate,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Keep a Python list of ids. Each step: run the model on all ids so far, turn the logits that predict the "
        "next token into a distribution with your two functions above, draw one token, append it, and decide "
        "whether to stop.",
        "The model returns one row of logits per position; the row for the last position is the one that predicts "
        "the next token. Draw one sample from the filtered probabilities with the generator you were given, make it "
        "a plain int, append it, and only then compare it with eos_id.",
    ],
    tolerance="exact",
)
EXERCISES = {GENERATE_TOKENS.name: GENERATE_TOKENS}


def check_generate_tokens(fn):
    """Check a student's ``generate_tokens(...)`` loop."""
    return GENERATE_TOKENS.check(fn)
