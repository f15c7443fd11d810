"""Mutation testing of the checks (issue #24 point 7): replay the committed mutant lists.

``make mutants`` (``tools/mutation``) generated ``tests/mutants/<notebook>.json``: every mutant of
each exercise's solution region in ``notebooks/src`` with its verdict. Here nothing is regenerated
except the (cheap) list of patches, to prove the list still matches the current solution source;
each mutant recorded as killed is run through its check again (public seed 0, hidden seeds 1 and 2)
and must still be killed. Equivalent mutants (each with its reason in the list) are not run. A
survivor still open (a gap someone is closing) is replayed too: still surviving -> xfail naming it;
killed now -> the list is stale. Scores: ``benchmarks/RESULTS_mutation.md``.
"""

from __future__ import annotations

import json

import pytest

from course_utils.checks import all_exercises
from tools.mutation.generate import LISTS, as_patch, describe
from tools.mutation.operators import mutants
from tools.mutation.run import first_failure, judge
from tools.mutation.sources import exercise_notebooks, solution

LISTS_BY_NOTEBOOK = {path.stem: json.loads(path.read_text()) for path in sorted(LISTS.glob("*.json"))}
RECORDS = {name: (notebook, record) for notebook, data in LISTS_BY_NOTEBOOK.items()
           for name, record in data["exercises"].items()}
REGENERATE = "the solution changed since the list was made: run `make mutants NB=<notebook>`"


def test_every_exercise_has_a_mutant_list_under_its_notebook():
    owners = exercise_notebooks()
    assert sorted(RECORDS) == sorted(all_exercises()), "run `make mutants` for the missing notebooks"
    assert {name: notebook for name, (notebook, _) in RECORDS.items()} == owners


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_list_matches_the_current_solution(name):
    notebook, record = RECORDS[name]
    sol = solution(name, notebook)
    assert (record["digest"], record["first_line"]) == (sol.digest, sol.first_line), REGENERATE
    stored = [{k: m[k] for k in ("operator", "start", "end", "replacement")} for m in record["mutants"]]
    fresh = [{k: v for k, v in describe(sol, p).items() if k in ("operator", "start", "end", "replacement")}
             for p in mutants(sol.source, sol.in_region)]
    assert stored == fresh, "the mutation operators changed since the list was made: run `make mutants`"
    for m in record["mutants"]:
        assert m["status"] in ("killed", "equivalent", "open"), m
        assert m["status"] != "equivalent" or len(m.get("equivalent", "").split()) >= 4, f"a reason, please: {m}"


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_every_non_equivalent_mutant_is_killed(name):
    notebook, record = RECORDS[name]
    sol = solution(name, notebook)
    survived, still_open, now_killed = [], [], []
    for m in record["mutants"]:
        if m["status"] == "equivalent":
            continue
        result = judge(sol, as_patch(m))
        where = f"line {m['line']}: {m['original']!r} -> {m['replacement']!r} ({m['operator']})"
        if m["status"] == "killed" and not result.killed:
            survived.append(where)
        elif m["status"] == "open":
            (now_killed if result.killed else still_open).append(where)
    assert not survived, f"{len(survived)} mutant(s) the check used to kill now pass it: " + "; ".join(survived)
    assert not now_killed, "killed now, listed as open: run `make mutants NB=...`: " + "; ".join(now_killed)
    if still_open:
        pytest.xfail(f"{len(still_open)} open survivor(s), a gap being closed: " + "; ".join(still_open))


def test_a_planted_wrong_list_entry_is_caught():
    """The replay can fail: the unmutated solution, listed as a killed mutant, passes its check."""
    notebook, record = RECORDS["stable_softmax"]
    sol = solution("stable_softmax", notebook)
    first = record["mutants"][0]
    identity = as_patch({**first, "replacement": first["original"]})
    assert not judge(sol, identity).killed
    assert judge(sol, as_patch(first)).killed


@pytest.mark.parametrize("name", ["stable_softmax", "safe_masked_softmax", "bpe_merge_pair", "attention_head"])
def test_the_replay_verdict_is_the_checks_verdict(name):
    """``first_failure`` (no diagnosis, cached reference answers) passes and fails exactly what ``check`` does."""
    exercise = all_exercises()[name]
    for impl in [exercise.reference, *(a.impl for a in exercise.alternatives), *(m.impl for m in exercise.mistakes)]:
        by_check = all(exercise.check(impl, seed=seed).passed for seed in (0, 1, 2))
        assert (first_failure(name, impl) is None) == by_check, impl
