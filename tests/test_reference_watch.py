"""The grader's watch for the course's reference (``uses_reference.reference_codes``, the trace in
``kernel_code.py``) never flags a correct answer: every accepted alternative of every exercise, run
the way the kernel runs a graded call, executes none of the watched code; the reference itself
always does."""

from __future__ import annotations

import sys

import pytest

from course_utils.checks import all_exercises
from course_utils.checks.core import pristine_copy
from course_utils.lab.grading.uses_reference import reference_codes
from course_utils.lab.grading.kernel_code import FINGERPRINT_CODE

# A grader test, like test_grade.py: with every exercise's seed-0 cases (the trained toy model's
# patterns among them) it takes ~17 s, so it runs in `make test`, not in the quick loop.
pytestmark = pytest.mark.slow

EXERCISES = all_exercises()
ALTERNATIVES = [(name, a) for name, ex in sorted(EXERCISES.items()) for a in ex.alternatives]
_NS: dict = {}
exec(FINGERPRINT_CODE, _NS)
DIGEST = _NS["_course_lab_code_digest"]


def watched_calls(exercise, impl) -> list[str]:
    """Names of watched functions that ran while ``exercise.run(impl, case)`` ran on the seed-0 cases
    (the same rule as the kernel's tracer: first line and code digest)."""
    watch = set(reference_codes(exercise))
    lines = {line for line, _ in watch}
    seen: list[str] = []

    def tracer(frame, event, arg):
        code = frame.f_code
        if code.co_firstlineno in lines and (code.co_firstlineno, DIGEST(code)) in watch:
            seen.append(code.co_name)
        return None

    def traced(call):
        old = sys.gettrace()
        sys.settrace(tracer)
        try:
            return call()
        finally:
            sys.settrace(old)

    def student(*args, **kwargs):  # a function exercise: the kernel traces each call of the function
        return traced(lambda: impl(*args, **kwargs))

    for case in exercise.cases(0):
        case = pristine_copy(case)
        try:
            if exercise.wants_class or exercise.run_in_kernel:  # the kernel traces the exercise's whole run
                traced(lambda: exercise.run(impl, case))
            else:
                exercise.run(student, case)
        except Exception:
            pass  # a failing call is the check's business, not the watch's
    return seen


@pytest.mark.parametrize("name,alternative", ALTERNATIVES, ids=[f"{n}-{a.name}" for n, a in ALTERNATIVES])
def test_no_accepted_alternative_runs_the_watched_reference(name, alternative):
    assert watched_calls(EXERCISES[name], alternative.impl) == []


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_the_reference_itself_is_seen(name):
    exercise = EXERCISES[name]
    assert reference_codes(exercise), f"nothing to watch for {name}"
    assert watched_calls(exercise, exercise.reference), f"the watch does not see {name}'s reference run"


def test_inheriting_the_course_forward_is_seen_and_inheriting_the_scaffolding_is_not():
    from course_utils.attention import multihead
    from course_utils.checks.multihead_attention.multi_head_attention import TorchSDPA

    exercise = EXERCISES["multi_head_attention"]

    class OnlyInherits(multihead.MultiHeadAttention):  # the course's forward does the work
        pass

    assert watched_calls(exercise, OnlyInherits) == ["forward"] * len(exercise.cases(0))
    assert issubclass(TorchSDPA, multihead.MultiHeadAttention)  # inherits __init__, writes its own forward
    assert watched_calls(exercise, TorchSDPA) == []


def test_a_wrapper_around_the_function_the_reference_hands_its_work_to_is_seen():
    from course_utils.moe import layer as moe

    exercise = EXERCISES["top_k_router"]
    assert watched_calls(exercise, lambda logits, k: moe.top_k_gates(logits, k))
    # the stated rule (README): other course functions are not the reference, so are not watched
    assert not watched_calls(exercise, lambda logits, k: moe.top_k_gates_mixtral(logits, k))
