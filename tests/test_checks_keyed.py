"""Every hidden case depends on the grader's secret, hand-made ones included (issue #43 point 5).

The grader keys the hidden seeds' generators by its secret (``lab/grading/hidden.keyed_exercise``). A
hand-made case (the ±10,000 logits, a worked example, the course's schedule run, a T = 0 row, a corpus
of a few words) used to be the same under every key, so a table of its answers, with a wrong general
answer for the rest, scored full marks. Hand-made cases now move with the key (``shared.keyed_uniform``,
``tokenisation._cases.keyed_letters``) while keeping their point, and a table made under one key fails
under another.
"""

from __future__ import annotations

import copy

import pytest
import torch

from course_utils.checks import all_exercises
from course_utils.checks.core import _same, pristine_copy
from course_utils.checks.outcome import HIDDEN_SEEDS
from course_utils.lab.grading.hidden import keyed_exercise

EXERCISES = all_exercises()
# The one hidden case with nothing to key: causal_mask(1) has a single input and a single right answer, so a
# table of it is the right answer (every wrong general answer meets the keyed sizes beside it).
UNKEYED = {("causal_mask", "n_ctx=1")}


def _comparable(value):
    """Modules by their printed form and weights (``_same`` treats modules as scaffolding), the rest as is."""
    if isinstance(value, torch.nn.Module):
        return [repr(value)] + [t for t in value.state_dict().values() if t.device.type != "meta"]
    if isinstance(value, (list, tuple)):
        return [_comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return value


@pytest.mark.slow  # builds every exercise's hidden cases under two keys (~1 min on 2 cores)
@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_every_hidden_case_changes_with_the_key(name):
    first, second = (keyed_exercise(EXERCISES[name], key).cases(HIDDEN_SEEDS[0]) for key in ("key one", "key two"))
    alike = [
        a.label for a, b in zip(first, second)
        if a.label == b.label and _same(_comparable([a.args, a.kwargs]), _comparable([b.args, b.kwargs]))
        and (name, a.label) not in UNKEYED
    ]
    assert not alike, f"{name}: hidden cases the same under two keys: {alike}"


def _key(value):
    """A hashable form of a call's inputs: tensors by dtype, shape and bytes."""
    if isinstance(value, torch.Tensor):
        return (str(value.dtype), tuple(value.shape), value.detach().contiguous().numpy().tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    return repr(value)


def _table_answer(name: str, key: str, wrong):
    """A notebook's cheat: the reference's answer to every call ``key``'s hidden cases make, looked up by the
    call's inputs, else ``wrong``."""
    exercise = keyed_exercise(EXERCISES[name], key)
    table = {}

    def record(*args):
        table[_key(args)] = exercise.reference(*copy.deepcopy(args))
        return table[_key(args)]

    for seed in HIDDEN_SEEDS:
        for case in exercise.cases(seed):
            exercise.run(record, pristine_copy(case))

    def answer(*args):
        found = table.get(_key(args))
        return found if found is not None else wrong(*args)

    return answer


def _naive_softmax(x):
    return x.exp() / x.exp().sum(-1, keepdim=True)  # no max shift: inf / inf at ±10,000


def _mistake(name: str, mistake: str):
    return next(m.impl for m in EXERCISES[name].mistakes if m.name == mistake)


@pytest.mark.parametrize(
    "name, wrong",
    [
        ("stable_softmax", _naive_softmax),
        ("bpe_encode_word", lambda: _mistake("bpe_encode_word", "merges in any order")),
        ("layer_norm", lambda: _mistake("layer_norm", EXERCISES["layer_norm"].mistakes[0].name)),
        ("lr_schedule", lambda: _mistake("lr_schedule", EXERCISES["lr_schedule"].mistakes[0].name)),
    ],
)
def test_a_table_of_one_keys_hidden_cases_fails_under_another(name, wrong):
    wrong = wrong if name == "stable_softmax" else wrong()
    cheat = _table_answer(name, "the key of last term", wrong)
    same_key, other_key = (keyed_exercise(EXERCISES[name], key) for key in ("the key of last term", "this term's"))
    assert all(same_key.check(cheat, seed).passed for seed in HIDDEN_SEEDS)  # the table does answer its own key
    assert not all(other_key.check(cheat, seed).passed for seed in HIDDEN_SEEDS)
