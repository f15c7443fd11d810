"""What a student's code chooses never carries a hidden input into their feedback (issue #43.4), and an
instructor test that raises fails only itself (#43.6), without kernels: the kernel side is the
grader's own kernel code run in this process (``test_grader_path.InProcessProxy``).

Each planted answer is right on the public cases and, on a hidden one, spells a number made from the
hidden input into one channel: the exception's type name, the name of the function that raised, the
line it raised on, or the name of a ``BaseException`` that escapes the call (the kernel's ``ename``).
"""

from __future__ import annotations

import pytest
import torch

from course_utils.checks import get_exercise
from course_utils.checks.outcome import HIDDEN_SEEDS
from course_utils.lab.grading.grade import grade_exercise
from course_utils.lab.grading.hidden import HiddenTests
from course_utils.lab.grading.plan import GradingPlan
from course_utils.lab.grading.probe import decode_reply
from grading_local import student
from test_grader_path import InProcessProxy

SOFTMAX = get_exercise("stable_softmax")
PUBLIC_INPUTS = [c.args[0] for c in SOFTMAX.cases(0)]
MARK = 7_654_321  # added to the hidden number, so it cannot be mistaken for another number in the text
HEAD = '''import types
def public(x):
    return any(x.shape == p.shape and torch.equal(x, p) for p in PUBLIC_INPUTS)

def right(x):
    s = x - x.amax(dim=-1, keepdim=True)
    return s.exp() / s.exp().sum(dim=-1, keepdim=True)

def secret(x):  # the hidden input, as a number the feedback must not show
    return MARK + int(abs(x.flatten()[0].item()) * 1000)

def blow(x):
    raise ValueError("boom")

'''
CHANNELS = {
    "type name": "    raise type(f'Leak{secret(x)}', (Exception,), {})('message')\n",
    "function name": "    types.FunctionType(blow.__code__.replace(co_name=f'leak{secret(x)}'), globals())(x)\n",
    "line number": "    types.FunctionType(blow.__code__.replace(co_firstlineno=secret(x) - 1), globals())(x)\n",
    "BaseException name": "    raise type(f'Leak{secret(x)}', (BaseException,), {})('message')\n",
}


class KernelLikeProxy(InProcessProxy):
    """As the kernel answers: a ``BaseException`` that escapes the call comes back as its ``ename``."""

    def _send(self, code: str):
        try:
            return super()._send(code)
        except Exception:
            raise
        except BaseException as exc:
            return decode_reply("error", f"{type(exc).__name__}: {exc}")


def _grade(fn, hidden: HiddenTests | None = None):
    proxy = KernelLikeProxy(SOFTMAX, fn)
    plan = GradingPlan({"stable_softmax": SOFTMAX}, HIDDEN_SEEDS, hidden or HiddenTests())
    return grade_exercise("stable_softmax", 2, lambda *a: proxy, plan)


@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_no_channel_of_the_students_choosing_reaches_the_feedback_of_a_hidden_case(channel):
    source = HEAD + "def stable_softmax(x):\n    if public(x):\n        return right(x)\n" + CHANNELS[channel]
    fn = student(source, "stable_softmax", torch=torch, PUBLIC_INPUTS=PUBLIC_INPUTS, MARK=MARK)
    row = _grade(fn)
    first_hidden = SOFTMAX.cases(HIDDEN_SEEDS[0])[0].args[0]
    planted = str(MARK + int(abs(first_hidden.flatten()[0].item()) * 1000))
    assert row.points == 0 and row.feedback.startswith("hidden case 1 of ")
    assert planted in row.detail, "the planted channel did not carry the number: the test proves nothing"
    assert planted not in row.feedback and "Leak" not in row.feedback and "leak" not in row.feedback
    told = row.feedback.split("failed: ", 1)[1]
    assert told.startswith("`stable_softmax` raised ")  # the exercise's own name, never the raising function's
    assert not any(ch.isdigit() for ch in told)  # no line, no number of any kind


def test_a_builtin_exception_is_named_and_a_made_one_is_not():
    raises = HEAD + "def stable_softmax(x):\n    if public(x):\n        return right(x)\n    blow(x)\n"
    fn = student(raises, "stable_softmax", torch=torch, PUBLIC_INPUTS=PUBLIC_INPUTS, MARK=MARK)
    assert "`stable_softmax` raised ValueError (" in _grade(fn).feedback
    made = raises.replace("    blow(x)\n", "    raise type('ValueErrorX', (Exception,), {})()\n")
    fn = student(made, "stable_softmax", torch=torch, PUBLIC_INPUTS=PUBLIC_INPUTS, MARK=MARK)
    assert "`stable_softmax` raised an exception (" in _grade(fn).feedback


CORRECT = "def stable_softmax(x):\n    s = x - x.amax(dim=-1, keepdim=True)\n    return s.exp() / s.exp().sum(dim=-1, keepdim=True)\n"
# right on every course case, wrongly shaped (flattened) on the instructor's (3, 5) rows
FLAT = CORRECT.replace("    s =", "    if x.shape == (3, 5):\n        return torch.softmax(x.flatten(), dim=-1)\n    s =")


def test_an_instructor_test_that_raises_fails_only_itself_with_its_detail_for_the_instructor():
    """Issue #43.6: ``allclose`` on a wrongly shaped answer raised out of the test: the whole submission
    became ``grader_error`` and the test's exception text was shown."""

    def test_stable_softmax__rows(student):
        x = torch.randn(3, 5, dtype=torch.float64)
        assert torch.allclose(student(x), torch.softmax(x, dim=-1)), "rows must match softmax"

    hidden = HiddenTests(functions={"stable_softmax": [test_stable_softmax__rows]})
    n = 4 * len(HIDDEN_SEEDS) + 1
    wrong = student(FLAT, "stable_softmax", torch=torch)
    row = _grade(wrong, hidden)
    assert (row.status, row.points) == ("ok", 0)
    assert row.feedback == f"hidden case {n} of {n} failed"  # nothing of what the test raised
    assert row.detail.startswith("the instructor's test raised RuntimeError: ")
    assert row.detail.endswith("[test_stable_softmax__rows]")
    right = student(CORRECT, "stable_softmax", torch=torch)
    assert _grade(right, hidden).points == 2  # the same test passes a right answer
