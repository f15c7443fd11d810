"""The grader reaches the same verdict as the notebook's check, for every exercise.

In the notebook a check calls the student's function directly; the grader calls it in the student's
kernel and gets back a copy of the answer (``kernel_code.py``, ``probe.py``), or runs the exercise's
whole ``run`` there (``wants_class``, ``run_in_kernel``). Here the kernel side is the grader's own
kernel code, run in this process, so every accepted alternative, the reference and every bank
mistake go through the real round trip (pickled inputs, ``torch.save`` / ``weights_only`` answers)
without starting kernels. An exercise whose ``run`` needs more than a copy of the answer (a
gradient, say) fails here if it is not marked ``run_in_kernel``.
"""

from __future__ import annotations

import functools

import pytest

from course_utils.checks import all_exercises
from course_utils.checks.core import FAILED, PASSED, Outcome, pristine_copy
from course_utils.checks.outcome import HIDDEN_SEEDS
from course_utils.lab.grading.uses_reference import exercise_files
from course_utils.lab.grading.grade import _judge, _outcome
from course_utils.lab.grading.kernel_code import snapshot_code
from course_utils.lab.grading.probe import StudentProxy, decode_reply

# every exercise's bank, on two seeds (the public check and one hidden case): a grader test, like
# test_grade.py and test_reference_watch.py, so it runs in `make test`, not in the quick loop
pytestmark = pytest.mark.slow

EXERCISES = all_exercises()
FILES = exercise_files()
SEEDS = (0, 1)


class InProcessProxy(StudentProxy):
    """A ``StudentProxy`` whose "kernel" is a namespace in this process holding the student's ``impl``."""

    def __init__(self, exercise, impl):
        name = exercise.expected_name
        super().__init__(kernel=None, loop=None, name=name, runner=(FILES[exercise.name], exercise.name))
        self.namespace = {"__name__": "__main__", name: impl}
        exec(snapshot_code([name], overwrite=True), self.namespace)

    def _send(self, code: str):
        exec(code, self.namespace)
        return decode_reply("ok", repr(self.namespace["_course_lab_result"]))


@functools.lru_cache(maxsize=None)
def _cases(name: str, seed: int) -> tuple:
    """An exercise's cases, built once per file (every use copies them first: ``pristine_copy``)."""
    return tuple(EXERCISES[name].cases(seed))


def _verdicts(exercise, impl) -> tuple[list[str], list[str], list[str]]:
    """(the notebook check's statuses, the grader's statuses, the bank mistakes the grader's feedback
    names, ``Judgement.mistake``) for ``impl`` on every case of ``SEEDS``."""
    proxy = InProcessProxy(exercise, impl)
    direct, graded, named = [], [], []
    for seed in SEEDS:
        for case in _cases(exercise.name, seed):
            outcome = Outcome.capture(lambda: exercise.run(impl, pristine_copy(case)))
            direct.append(exercise.judge(case, outcome)[0])
            found = _judge(exercise, case, _outcome(exercise, proxy, pristine_copy(case)))
            graded.append(found.status)
            named.append(found.mistake)
    return direct, graded, named


BANK = [
    (name, kind, label, impl)
    for name, ex in sorted(EXERCISES.items())
    for kind, label, impl in [
        ("reference", "reference", ex.reference),
        *[("alternative", a.name, a.impl) for a in ex.alternatives],
        *[("mistake", m.name, m.impl) for m in ex.mistakes],
    ]
]


@pytest.mark.parametrize("name,kind,label,impl", BANK, ids=[f"{n}-{k}-{lab}" for n, k, lab, _ in BANK])
def test_the_grader_agrees_with_the_notebook_check(name, kind, label, impl):
    direct, graded, named = _verdicts(EXERCISES[name], impl)
    if kind == "mistake":
        assert any(status != PASSED for status in direct), f"{label} passes the notebook check"
        # where it fails (not raises), the feedback names a bank mistake (its own or one giving the same answer)
        assert all(n for s, n in zip(graded, named) if s == FAILED), f"{label}: no bank mistake named"
    else:
        assert set(direct) == {PASSED}, f"the notebook check rejects the {kind} {label}: {direct}"
    assert graded == direct, f"the grader says {graded}, the notebook check {direct}"


def test_every_seed_has_as_many_cases_as_the_public_check():
    """The public check announces ``cases x len(HIDDEN_SEEDS)`` hidden cases, and the grader numbers
    them the same way (``hidden case k of n``): both hold only if no seed changes the count."""
    counts = {name: {len(_cases(name, seed)) for seed in (0, *HIDDEN_SEEDS)} for name in EXERCISES}
    assert {name: c for name, c in counts.items() if len(c) != 1} == {}
