"""Exercise ``beam_search(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None)``: keep the
``beam_width`` likeliest partial sequences at every step.

Required form (stated in the notebook): a sequence's score is the sum of the natural-log probabilities of its
new tokens; each step extends every unfinished beam by every token, carries a finished beam (its last new
token is ``eos_id``) over unchanged, and keeps the ``beam_width`` best candidates; return ``(ids, score)`` of
the best beam after ``max_new_tokens`` steps, ids as a list (prompt included). Reference: the course's
``beam_search.beam_search``, tested against an exhaustive search; one case is wide enough to keep every
sequence, so there the answer is the likeliest sequence of all. The check's logits have no ties.
"""

from __future__ import annotations

import heapq

import torch

from course_utils import beam_search as search
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.masking_softmax_temperature._shared import F64, TableModel
from course_utils.checks.shared import keyed_uniform


def beam_search(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None):
    """Reference: the course's ``beam_search.beam_search``."""
    return search.beam_search(next_token_logits, prompt, max_new_tokens, beam_width, eos_id)


def _greedy_trap(seed: int = 0) -> TableModel:
    """After the prompt [0]: token 1 (p .6) leads to a flat row (best .34), token 2 (p .4) to a sure one (.97)."""
    probs = torch.full((3, 3, 3), 1 / 3, dtype=F64)
    probs[0, 0] = torch.tensor([0.0, 0.6, 0.4])
    probs[0, 1] = torch.tensor([0.33, 0.33, 0.34])
    probs[0, 2] = torch.tensor([0.97, 0.02, 0.01])
    if seed:  # hidden: the first split moved by up to ±0.05 (keyed by the grader's secret); the trap holds:
        move = float(keyed_uniform(seed, -0.05, 0.05))  # 0.65 x 0.34 < 0.35 x 0.97
        probs[0, 0] = torch.tensor([0.0, 0.6 + move, 0.4 - move])
    return TableModel.from_table(probs.log())


def _beam_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(1, 4, (2,), generator=gen).tolist()  # ids every case's vocabulary has
    return [
        Case("a greedy trap: the likelier first token leads to a flat row; 2 beams, 2 new tokens",
             (_greedy_trap(seed), [0], 2, 2)),
        Case("6-token vocabulary, 2 beams, 4 new tokens", (TableModel(6, seed), prompt, 4, 2)),
        Case("6-token vocabulary, 1 beam (greedy), 5 new tokens", (TableModel(6, seed + 1), prompt, 5, 1)),
        Case("6-token vocabulary, 3 beams, 6 new tokens, eos_id 0", (TableModel(6, seed + 2, 1.5), prompt, 6, 3, 0)),
        Case("the prompt ends with eos_id 0, which finishes nothing: only a NEW eos does; 2 beams, 3 new tokens",
             (TableModel(6, seed + 4, 1.5), [*prompt, 0], 3, 2, 0)),
        Case(
            "4-token vocabulary, 64 beams = every sequence of 3 new tokens (the likeliest of all)",
            (TableModel(4, seed + 3), prompt[:1], 3, 64),
        ),
    ]


def _log_probs(next_token_logits, ids):
    return next_token_logits(torch.tensor(ids))[-1].log_softmax(dim=-1).tolist()


def _finished(ids, prompt, eos_id):
    return eos_id is not None and len(ids) > len(prompt) and ids[-1] == eos_id


def _search(next_token_logits, prompt, max_new_tokens, beam_width, eos_id, *, children=None, step_score=None):
    """A written-out beam search with knobs for the mistakes."""
    beams = [(list(prompt), 0.0)]
    for _ in range(max_new_tokens):
        candidates = []
        for ids, score in beams:
            if _finished(ids, prompt, eos_id):
                candidates.append((ids, score))
                continue
            log_probs = _log_probs(next_token_logits, ids)
            tokens = sorted(range(len(log_probs)), key=lambda t: -log_probs[t])[:children]
            for t in tokens:
                candidates.append((ids + [t], step_score(score, log_probs[t]) if step_score else score + log_probs[t]))
        beams = sorted(candidates, key=lambda c: c[1], reverse=True)[:beam_width]
    return beams[0]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "only the last token's log-probability",
    "a beam's score is the SUM of the log-probabilities of all its new tokens: add the new one to the beam's score",
)
def _last_token_only(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None):
    return _search(next_token_logits, prompt, max_new_tokens, beam_width, eos_id, step_score=lambda s, lp: lp)


@bank.mistake(
    "probabilities added",
    "add log-probabilities (log_softmax): the probability of a sequence is the product of its tokens' "
    "probabilities, and a sum of logs is the log of that product",
)
def _probabilities_added(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None):
    return _search(next_token_logits, prompt, max_new_tokens, beam_width, eos_id,
                   step_score=lambda s, lp: s + torch.tensor(lp).exp().item())


@bank.mistake(
    "one child per beam",
    "extend every beam by EVERY token and rank all the candidates together; keeping only each beam's best "
    "continuation never lets a second-best token in",
)
def _one_child(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None):
    return _search(next_token_logits, prompt, max_new_tokens, beam_width, eos_id, children=1)


@bank.mistake("finished beams extended", "once a beam's last new token is eos_id, stop extending it")
def _finished_extended(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None):
    return _search(next_token_logits, prompt, max_new_tokens, beam_width, None)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("heapq.nlargest")
def _nlargest(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None):
    beams = [(0.0, list(prompt))]
    for _ in range(max_new_tokens):
        candidates = []
        for score, ids in beams:
            if _finished(ids, prompt, eos_id):
                candidates.append((score, ids))
            else:
                candidates += [(score + lp, ids + [t]) for t, lp in enumerate(_log_probs(next_token_logits, ids))]
        beams = heapq.nlargest(beam_width, candidates, key=lambda c: c[0])
    return beams[0][1], beams[0][0]


@bank.alternative("a table of candidate scores and topk, float32")
def _topk(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None):
    beams, scores = [list(prompt)], torch.zeros(1)
    for _ in range(max_new_tokens):
        rows = []
        for ids, score in zip(beams, scores):
            log_probs = next_token_logits(torch.tensor(ids))[-1].float().log_softmax(dim=-1)
            if _finished(ids, prompt, eos_id):  # a single candidate, the beam itself, kept in the eos column
                rows.append(torch.full_like(log_probs, float("-inf")).index_fill(0, torch.tensor(eos_id), score))
            else:
                rows.append(score + log_probs)
        table = torch.stack(rows)  # (beams, d_vocab)
        best = table.flatten().topk(min(beam_width, int(torch.isfinite(table).sum()))).indices
        beams = [beams[b] if _finished(beams[b], prompt, eos_id) else beams[b] + [t]
                 for b, t in zip((best // table.shape[1]).tolist(), (best % table.shape[1]).tolist())]
        scores = table.flatten()[best]
    return beams[0], float(scores[0])


@bank.alternative("recursion over the steps, logits minus logsumexp")
def _recursive(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None):
    def step(beams, left):
        if left == 0:
            return beams
        candidates = []
        for ids, score in beams:
            if _finished(ids, prompt, eos_id):
                candidates.append((ids, score))
                continue
            logits = next_token_logits(torch.tensor(ids))[-1]
            log_probs = logits - logits.logsumexp(dim=-1)
            candidates += [(ids + [t], score + float(log_probs[t])) for t in range(len(log_probs))]
        candidates.sort(key=lambda c: -c[1])
        return step(candidates[:beam_width], left - 1)

    return step([(list(prompt), 0.0)], max_new_tokens)[0]


BEAM_SEARCH = Exercise(
    name="beam_search",
    reference=beam_search,
    cases=_beam_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Keep a list of (ids, score) pairs, starting with the prompt and score 0. Each step builds every candidate "
        "one token longer, scores it, and keeps only the best beam_width of them.",
        "A candidate's score is its beam's score plus the log-probability of the added token (log_softmax of the "
        "last row of logits). Sort all candidates by score, best first, and slice. A beam whose last new token is "
        "eos_id goes into the candidates as it is.",
    ],
)
EXERCISES = {BEAM_SEARCH.name: BEAM_SEARCH}


def check_beam_search(fn):
    """Check a student's ``beam_search(...)``; it returns (ids, score)."""
    return BEAM_SEARCH.check(fn)
