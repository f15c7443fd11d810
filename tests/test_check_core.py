"""The check machinery itself: pristine inputs, teaching tolerance, readable messages, one-line errors.

Each behaviour is shown on a small exercise built here, so a change to a notebook's checks cannot
hide a regression in the machinery (tests/test_checks.py runs every course exercise)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from course_utils.checks.compare import describe_mismatch, distinct_digits
from course_utils.checks.core import ERROR, FAILED, PASSED, Alternative, Case, Exercise, Mistake
from course_utils.checks.outcome import error_hint
from course_utils.tolerances import TEACHING_TOLERANCES, teaching_tolerance


def _softmax(x):
    shifted = x - x.amax(dim=-1, keepdim=True)
    return shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)


def _cases(seed):
    gen = torch.Generator().manual_seed(seed)
    return [Case("3 rows of 5 float64 logits", (torch.randn(3, 5, generator=gen, dtype=torch.float64),)),
            Case("logits near 1000 (float64)", (1000 + torch.randn(2, 4, generator=gen, dtype=torch.float64),))]


def _in_place(x):
    x -= x.amax(dim=-1, keepdim=True)
    x.exp_()
    x /= x.sum(dim=-1, keepdim=True)
    return x


def _float32(x):
    return _softmax(x.float())


SOFTMAX = Exercise(name="core_softmax", reference=_softmax, cases=_cases,
                   mistakes=[Mistake("no shift", lambda x: x.exp() / x.exp().sum(-1, keepdim=True), "subtract the max")],
                   alternatives=[Alternative("float32", _float32), Alternative("in place", _in_place)],
                   hints=["a nudge in words", "a stronger nudge in words"])


def test_a_float32_answer_passes_for_float64_inputs():
    assert SOFTMAX.check(_float32).passed


def test_an_in_place_answer_passes_with_a_friendly_note_and_the_reference_is_pristine():
    verdict = SOFTMAX.check(_in_place)
    assert verdict.status == PASSED, str(verdict)
    assert "changed its input `x` in place" in verdict.message


def test_the_reference_runs_before_the_student_on_its_own_copy():
    seen = []

    def student(x):
        seen.append(x.clone())
        out = _softmax(x)
        x.zero_()  # wrecks its input after computing the right answer
        return out

    assert SOFTMAX.check(student).passed
    case = _cases(0)[0]
    assert torch.equal(seen[0], case.args[0]), "the student got the pristine inputs"


def test_a_wrong_answer_still_fails_at_the_teaching_tolerance():
    verdict = SOFTMAX.check(lambda x: _softmax(x) * (1 + 1e-3))
    assert verdict.status == FAILED


def test_a_mismatch_message_never_shows_two_values_that_print_the_same():
    expected = torch.tensor([5.656854249492381], dtype=torch.float64)
    got = expected * (1 + 3e-6)
    message = describe_mismatch(expected, got, tol=(1e-7, 1e-9))
    shown = message.split("expected ")[1].split(",")[0], message.split("got ")[1].split(" ")[0]
    assert shown[0] != shown[1], message
    assert "largest absolute error" in message and "largest relative error" in message and "rtol" in message
    assert distinct_digits(0.6118232, 0.6118233) == ("0.6118232", "0.6118233")
    number_message = describe_mismatch(5.656854249492381, 5.656854249492381 * (1 + 3e-6), tol=(1e-7, 1e-9))
    assert "expected 5.656854 " not in number_message and "relative error" in number_message


@pytest.mark.parametrize("expected,got", [
    (torch.tensor(0.25, dtype=torch.float64), 0.25),                  # a Python float for a 0-d tensor
    (0.25, torch.tensor(0.25)),                                        # a 0-d tensor for a number
    (0.25, Fraction(1, 4)),                                            # a Fraction
    (0.25, np.float32(0.25)),                                          # a NumPy scalar
    (torch.tensor([0.0, 1.0, 0.0]), np.array([0.0, 1.0, 0.0])),        # a NumPy array for a tensor
    (torch.tensor([0, 1, 0]), torch.tensor([0.0, 1.0, 0.0])),          # a float one-hot for an integer one
    ([1, 2, 3], torch.tensor([1, 2, 3])),                               # a tensor for a list of numbers
])
def test_equally_valid_forms_pass(expected, got):
    assert describe_mismatch(expected, got, tol=teaching_tolerance()) is None


def test_other_forms_that_are_wrong_still_fail():
    assert describe_mismatch(torch.tensor([0, 1, 0]), torch.tensor([0.0, 0.5, 0.5])) is not None
    assert describe_mismatch(0.25, Fraction(1, 3), tol=teaching_tolerance()) is not None
    assert describe_mismatch(0.25, "0.25") is not None


def test_a_raised_exception_is_one_line_with_the_students_line_and_a_hint():
    namespace: dict = {}
    exec(compile("def student(x):\n    y = x.transpose(-2, -1)\n    return y.view(-1)\n", "/tmp/ipykernel_1/cell.py", "exec"), namespace)
    verdict = SOFTMAX.check(namespace["student"])
    assert verdict.status == ERROR
    text = str(verdict)
    assert "\n" not in text and "Traceback" not in text
    assert "raised RuntimeError in `student`, line 3" in text
    assert "use `.reshape(...)`" in text and "(case: 3 rows of 5 float64 logits)" in text


def test_error_hints_cover_the_common_torch_errors():
    assert "transpose" in error_hint("mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)")
    assert "device" in error_hint("Expected all tensors to be on the same device, but found cuda:0 and cpu")
    assert error_hint("something nobody has seen") == ""


def test_teaching_tolerances_are_one_table_and_validated():
    assert teaching_tolerance("float32") == TEACHING_TOLERANCES["float32"]
    assert teaching_tolerance("float64") < teaching_tolerance("float32") < teaching_tolerance("loose")
    with pytest.raises(ValueError, match="precision must be one of"):
        teaching_tolerance("float31")
    with pytest.raises(ValueError, match="precision must be one of"):
        Exercise(name="x", reference=_softmax, cases=_cases, tolerance="nope")


def test_exact_precision_rejects_any_rounding():
    ex = Exercise(name="core_exact", reference=lambda x: x * 2, cases=lambda s: [Case("ints", (torch.tensor([1.0, 2.0]),))],
                  tolerance="exact")
    assert ex.check(lambda x: x + x).passed
    assert ex.check(lambda x: x * 2 + 1e-6).status == FAILED
