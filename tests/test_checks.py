"""Every check of every notebook, tested the same way: the reference passes (on the public and
hidden seeds), a stub reports 'not attempted', each mistake in its bank fails with its own hint,
each accepted alternative passes (on every seed), the hints are progressive, and things that are
not submissions are rejected with a clear message."""

from __future__ import annotations

import functools
import inspect

import pytest

from course_utils.checks import all_exercises, hint
from course_utils.checks.core import ERROR, FAILED, NOT_ATTEMPTED

EXERCISES = all_exercises()
MISTAKES = [(name, m) for name, ex in sorted(EXERCISES.items()) for m in ex.mistakes]
ALTERNATIVES = [(name, a) for name, ex in sorted(EXERCISES.items()) for a in ex.alternatives]
MIN_ALTERNATIVES, MIN_MISTAKES, MIN_HINTS = 3, 2, 2


def _stub_for(exercise):
    if exercise.wants_class:
        class Stub:
            def __init__(self, *args, **kwargs):
                raise NotImplementedError("stub")
        return Stub

    @functools.wraps(exercise.reference)
    def stub(*args, **kwargs):
        raise NotImplementedError("stub")

    return stub


def test_every_exercise_is_graded_in_exactly_one_notebook():
    """No orphan checks (defined but in no notebook's metadata) and no exercise claimed twice."""
    from notebook_tools import course_notebooks, read

    owners: dict[str, list[str]] = {}
    for path in course_notebooks():
        for name in read(path).metadata.get("course", {}).get("exercises", {}):
            owners.setdefault(name, []).append(path.name)
    assert sorted(EXERCISES) == sorted(owners), f"only in checks: {sorted(set(EXERCISES) - set(owners))}; only in notebooks: {sorted(set(owners) - set(EXERCISES))}"
    assert all(len(paths) == 1 for paths in owners.values()), {n: p for n, p in owners.items() if len(p) > 1}


# Seed 0 in the quick loop (`make test-fast`); all three in `make test`.
SEEDS = [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)]


@pytest.mark.parametrize("name", sorted(EXERCISES))
@pytest.mark.parametrize("seed", SEEDS)
def test_reference_passes(name, seed):
    exercise = EXERCISES[name]
    verdict = exercise.check(exercise.reference, seed=seed)
    assert verdict.passed, str(verdict)
    assert str(verdict).startswith("✅")


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_stub_is_not_attempted(name):
    exercise = EXERCISES[name]
    verdict = exercise.check(_stub_for(exercise))
    assert verdict.status == NOT_ATTEMPTED, str(verdict)
    assert "not attempted" in str(verdict)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_each_exercise_has_a_bank_of_at_least_two_mistakes(name):
    mistakes = EXERCISES[name].mistakes
    assert len(mistakes) >= MIN_MISTAKES
    assert len({m.hint for m in mistakes}) == len(mistakes), "two mistakes share a hint"


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_each_exercise_has_a_bank_of_at_least_three_accepted_alternatives(name):
    alternatives = EXERCISES[name].alternatives
    assert len(alternatives) >= MIN_ALTERNATIVES, f"{name} has {len(alternatives)} accepted alternatives"
    assert len({a.name for a in alternatives}) == len(alternatives), "two alternatives share a name"
    assert all(a.impl is not EXERCISES[name].reference for a in alternatives), "the reference is not an alternative"


@pytest.mark.parametrize("name,alternative", ALTERNATIVES, ids=[f"{n}-{a.name}" for n, a in ALTERNATIVES])
@pytest.mark.parametrize("seed", SEEDS)
def test_each_accepted_alternative_passes(name, alternative, seed):
    verdict = EXERCISES[name].check(alternative.impl, seed=seed)
    assert verdict.passed, f"{alternative.name}: {verdict}"


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_each_exercise_has_progressive_hints(name):
    exercise = EXERCISES[name]
    assert len(exercise.hints) >= MIN_HINTS, f"{name} has {len(exercise.hints)} hints"
    assert len(set(exercise.hints)) == len(exercise.hints), "two hints are the same"
    assert all(isinstance(h, str) and len(h.split()) >= 4 for h in exercise.hints), "a hint is a sentence"
    assert hint(name).text == exercise.hints[0] and hint(name, len(exercise.hints)).level == len(exercise.hints)


@pytest.mark.parametrize("name,mistake", MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_each_mistake_fails_with_its_own_hint(name, mistake):
    verdict = EXERCISES[name].check(mistake.impl)
    assert verdict.status == FAILED, str(verdict)
    assert verdict.message.startswith(mistake.hint), f"expected hint {mistake.hint!r}, got {verdict.message!r}"


@pytest.mark.parametrize("name,mistake", MISTAKES, ids=[f"{n}-{m.name}" for n, m in MISTAKES])
def test_no_mistake_is_an_accepted_answer(name, mistake):
    """A mistake must differ from the reference by more than the teaching tolerance on some case."""
    exercise = EXERCISES[name]
    verdicts = [exercise.check(mistake.impl, seed=seed) for seed in (0, 1, 2)]
    assert all(v.status == FAILED for v in verdicts), [str(v) for v in verdicts]


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_not_callable_is_rejected_clearly(name):
    verdict = EXERCISES[name].check(42)
    assert verdict.status == ERROR
    assert "got int" in verdict.message


@pytest.mark.parametrize("name", [n for n, ex in sorted(EXERCISES.items()) if not ex.wants_class])
def test_wrong_signature_is_named(name):
    def takes_nothing():
        return None

    verdict = EXERCISES[name].check(takes_nothing)
    assert verdict.status == ERROR
    assert "signature" in verdict.message


def test_a_crashing_submission_names_the_error_and_case():
    def crashes(x):
        raise ValueError("boom")

    verdict = EXERCISES["stable_softmax"].check(crashes)
    assert verdict.status == ERROR
    assert "raised ValueError in `crashes`, line" in verdict.message and ": boom" in verdict.message
    assert "(case:" in verdict.message


def test_an_unknown_wrong_answer_gets_the_generic_difference():
    def off_by_a_little(x):
        ref = EXERCISES["stable_softmax"].reference(x)
        return ref * 0.999 + 0.001 / x.shape[-1]  # still sums to 1, still no NaN

    verdict = EXERCISES["stable_softmax"].check(off_by_a_little)
    assert verdict.status == FAILED
    assert "values differ from the reference" in verdict.message


def test_exercise_references_have_signatures():
    for name, exercise in EXERCISES.items():
        inspect.signature(exercise.reference)  # raises if a builtin without one slipped in


def test_hint_levels_and_names_are_validated():
    with pytest.raises(ValueError, match="name must be an exercise name"):
        hint("no_such_exercise")
    name = sorted(EXERCISES)[0]
    with pytest.raises(ValueError, match="level must be an int from 1 to"):
        hint(name, 99)
    with pytest.raises(ValueError, match="level must be an int"):
        hint(name, 0)


def test_a_misspelt_exercise_name_gets_a_did_you_mean():
    with pytest.raises(ValueError, match=r"did you mean hint\('stable_softmax'\)"):  # the closest first
        hint("stable_sofmax")
    with pytest.raises(ValueError, match=r"did you mean hint\('stable_softmax'\)"):
        hint("Stable_Softmax ")
    with pytest.raises(ValueError, match=r"did you mean hint\('causal_mask'\)"):
        hint("casual_mask")

    def stable_softmax(x):  # the student's function passed instead of its name
        return x

    with pytest.raises(ValueError, match=r"a string.*did you mean hint\('stable_softmax'\)"):
        hint(stable_softmax)
    with pytest.raises(ValueError, match="known: ") as nothing_close:
        hint("zzzz")
    assert "did you mean" not in str(nothing_close.value)


@pytest.mark.parametrize("level, meant", [(99, "last"), (0, 1), (-3, 1), ("2", 2), (2.0, 2), (None, 1), (True, 1)])
def test_a_bad_hint_level_gets_a_did_you_mean(level, meant):
    name = "stable_softmax"
    top = len(EXERCISES[name].hints)
    meant = top if meant == "last" else meant
    with pytest.raises(ValueError, match=rf"from 1 to {top} .*did you mean hint\('{name}', {meant}\)\?"):
        hint(name, level)
    assert hint(name, meant).level == meant  # and what it suggests is a hint that exists
