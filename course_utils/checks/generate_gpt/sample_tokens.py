"""Exercise ``sample_tokens(model, prompts, n_new, temperature, generator, pad_id)``: the sampling loop without a
cache, for a batch of prompts of different lengths, left-padded as in notebook 04.

Required form (stated in the notebook): ``prompts`` a list of prompts (lists of token ids) of different lengths;
each step the sequences so far (the last ``model.cfg.n_ctx`` tokens of each) go into one batch with
``masking.left_padded_batch(seqs, pad_id)``, the model runs as ``model(ids, mask, positions)`` (a
``padded.PaddedGPT``) and one token per row is drawn from the last column's logits with ``sample_next_token(logits,
temperature, generator=generator)``, once per step for the whole batch, so the draws match the check's (compared
exactly; every call gets a fresh generator seeded the same way); return the sequences left-padded, (batch,
longest prompt + n_new). The reference is ``padded.sample_padded``, whose greedy rows are each prompt's ``generate``
alone (``tests/test_padded.py``). ``pad_id`` is a real token id in the cases, so unmasked padding shows.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import tiny_model
from course_utils.gpt.padded import PaddedGPT, sample_padded
from course_utils.masking import causal_mask, left_padded_batch
from course_utils.sampling import sample_next_token


def sample_tokens(model, prompts, n_new, temperature, generator, pad_id):
    """Reference: ``padded.sample_padded``."""
    return sample_padded(model, prompts, n_new, temperature, generator, pad_id)


def _padded_model(seed: int) -> PaddedGPT:
    tiny = tiny_model(seed)
    model = PaddedGPT(tiny.cfg)
    model.load_state_dict(tiny.state_dict())
    return model.eval()


def _prompts(gen, *lengths):
    return [torch.randint(0, 23, (n,), generator=gen).tolist() for n in lengths]


def _sample_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    model = _padded_model(seed)
    return [
        Case(  # sampled, past the context of 12 for the longest: cropping shows too
            "3 prompts of 5, 2 and 10 tokens, 6 new, temperature 0.8, pad_id 0 (also a real token)",
            (model, _prompts(gen, 5, 2, 10), 6, 0.8, 0, seed),
        ),
        Case("2 prompts of 3 and 11 tokens, 5 new, temperature 0 (greedy), pad_id 7",
             (model, _prompts(gen, 3, 11), 5, 0.0, 7, seed)),
    ]


def _run_sampler(impl, case: Case):
    """The last argument of a case is a seed: each call gets a fresh generator seeded with it (passed before pad_id)."""
    model, prompts, n_new, temperature, pad_id, seed = case.args
    return impl(model, [list(p) for p in prompts], n_new, temperature, torch.Generator().manual_seed(seed), pad_id)


def _loop(model, prompts, n_new, pick, batch):
    """The loop with knobs for the mistakes: ``batch(seqs)`` -> (ids, mask, positions), ``pick(logits)`` -> ids."""
    seqs = [list(p) for p in prompts]
    for _ in range(n_new):
        ids, mask, positions = batch([s[-model.cfg.n_ctx :] for s in seqs])
        for seq, token in zip(seqs, pick(model(ids, mask, positions)[:, -1]).tolist()):
            seq.append(token)
    return seqs


bank = Bank()


def _draw(temperature, generator):
    return lambda logits: sample_next_token(logits, temperature, generator=generator)


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "padded on the right",
    "pad on the LEFT (left_padded_batch): then every prompt ends in the last column, whose logits predict each "
    "prompt's next token; padded on the right, the shorter prompts' last column is padding",
)
def sample_right_padded(model, prompts, n_new, temperature, generator, pad_id):
    def right(seqs):
        n = max(len(s) for s in seqs)
        ids = torch.tensor([s + [pad_id] * (n - len(s)) for s in seqs])
        real = torch.tensor([[True] * len(s) + [False] * (n - len(s)) for s in seqs])
        return ids, causal_mask(n) & real[:, None, :], torch.arange(n).expand(len(seqs), n)

    return left_padded_batch(_loop(model, prompts, n_new, _draw(temperature, generator), right), pad_id)[0]


@bank.mistake(
    "padding not masked",
    "pass the mask left_padded_batch returns (causal, and no query sees a padding key): with the causal mask alone "
    "the shorter prompts attend to the padding in front of them",
)
def sample_unmasked(model, prompts, n_new, temperature, generator, pad_id):
    def causal_only(seqs):
        ids, _, positions = left_padded_batch(seqs, pad_id)
        return ids, causal_mask(ids.shape[1]).expand(ids.shape[0], -1, -1), positions

    return left_padded_batch(_loop(model, prompts, n_new, _draw(temperature, generator), causal_only), pad_id)[0]


@bank.mistake(
    "positions from the first column",
    "pass the positions left_padded_batch returns: each prompt's positions count from 0 at its first real token, "
    "as if it were alone, not from the batch's first column",
)
def sample_column_positions(model, prompts, n_new, temperature, generator, pad_id):
    def columns(seqs):
        ids, mask, _ = left_padded_batch(seqs, pad_id)
        return ids, mask, torch.arange(ids.shape[1]).expand_as(ids)

    return left_padded_batch(_loop(model, prompts, n_new, _draw(temperature, generator), columns), pad_id)[0]


@bank.mistake(
    "always greedy",
    "draw a sample from the temperature-scaled distribution (notebook 04's sampler, with the generator you were "
    "given); argmax ignores the temperature",
)
def sample_always_greedy(model, prompts, n_new, temperature, generator, pad_id):
    seqs = _loop(model, prompts, n_new, lambda logits: logits.argmax(-1), lambda s: left_padded_batch(s, pad_id))
    return left_padded_batch(seqs, pad_id)[0]


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("padded by hand, as notebook 04's left_pad_batch")
def _sample_by_hand(model, prompts, n_new, temperature, generator, pad_id):
    seqs = [list(p) for p in prompts]
    for _ in range(n_new):
        window = [s[-model.cfg.n_ctx :] for s in seqs]
        n = max(len(s) for s in window)
        ids = torch.tensor([[pad_id] * (n - len(s)) + s for s in window])
        real = torch.tensor([[False] * (n - len(s)) + [True] * len(s) for s in window])
        positions = (real.cumsum(-1) - 1).clamp_min(0)
        mask = torch.ones(n, n, dtype=torch.bool).tril() & real[:, None, :]
        nxt = sample_next_token(model(ids, mask, positions)[:, -1], temperature, generator=generator)
        seqs = [s + [t] for s, t in zip(seqs, nxt.tolist())]
    n = max(len(s) for s in seqs)
    return torch.tensor([[pad_id] * (n - len(s)) + s for s in seqs])


@bank.alternative("new tokens in a (batch, n_new) tensor, joined to the prompts at the end")
def _sample_new_tensor(model, prompts, n_new, temperature, generator, pad_id):
    new = torch.zeros(len(prompts), n_new, dtype=torch.long)
    for step in range(n_new):
        seqs = [list(p) + new[i, :step].tolist() for i, p in enumerate(prompts)]
        ids, mask, positions = left_padded_batch([s[-model.cfg.n_ctx :] for s in seqs], pad_id)
        new[:, step] = sample_next_token(model(ids, mask=mask, positions=positions)[:, -1], temperature,
                                         generator=generator)
    return left_padded_batch([list(p) + row for p, row in zip(prompts, new.tolist())], pad_id)[0]


@bank.alternative("a while loop, the cropped sequences padded each step")
def _sample_while(model, prompts, n_new, temperature, generator, pad_id):
    seqs, target = [list(p) for p in prompts], len(prompts[0]) + n_new
    while len(seqs[0]) < target:
        ids, mask, positions = left_padded_batch([s[len(s) - min(len(s), model.cfg.n_ctx) :] for s in seqs], pad_id)
        drawn = sample_next_token(model(ids, mask, positions)[:, -1, :], temperature, generator=generator)
        for seq, token in zip(seqs, drawn):
            seq.append(int(token))
    return left_padded_batch(seqs, pad_id)[0]


SAMPLE_TOKENS = Exercise(
    name="sample_tokens",
    reference=sample_tokens,
    cases=_sample_cases,
    tolerance="exact",
    run=_run_sampler,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Keep the sequences as lists of ids. Each step: pad them into one batch on the left (notebook 04), run the "
        "model with the mask and the positions, draw one token per row from the last column, append each to its "
        "sequence.",
        "left_padded_batch gives ids, mask and positions for the sequences cut to their last n_ctx ids: pass all "
        "three to the model, keep the last column, draw with the generator you were given; at the end pad the "
        "finished sequences once more for the result.",
    ],
)
EXERCISES = {SAMPLE_TOKENS.name: SAMPLE_TOKENS}


def check_sample_tokens(fn):
    """Check a student's ``sample_tokens(model, prompts, n_new, temperature, generator, pad_id)``."""
    return SAMPLE_TOKENS.check(fn)
