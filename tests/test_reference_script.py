"""The course's reference compiled by TorchScript (``torch.jit.trace``, ``torch.jit.script``) is still the
course's code (issue #43 point 8): it runs no Python frame the grader's watch could see, so where it comes
from is read from its graph (``kernel_code._course_lab_script_file``), bound to the exercise's name or reached
by the student's function through a global, a closure or a default."""

from __future__ import annotations

import warnings

import torch

from course_utils.checks.welcome.stable_softmax import stable_softmax as reference
from course_utils.lab.grading.kernel_code import FINGERPRINT_CODE
from course_utils.lab.grading.uses_reference import is_course_code

KERNEL: dict = {}
exec(FINGERPRINT_CODE, KERNEL)


def origin(obj) -> dict:
    return dict(zip(("file", "fingerprint"), KERNEL["_course_lab_fingerprint"](obj)))


def _traced(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.trace(fn, (torch.randn(3, 5),))


def test_a_traced_reference_is_the_course_code_bound_or_wrapped():
    traced = _traced(reference)
    assert is_course_code(origin(traced))
    cell: dict = {"__name__": "__main__", "traced": traced}
    exec(compile("def stable_softmax(x):\n    return traced(x)\n", "/tmp/ipykernel_1/7.py", "exec"), cell)
    assert is_course_code(origin(cell["stable_softmax"]))  # through a global name
    exec(compile("def make(t):\n    return lambda x: t(x)\n", "/tmp/ipykernel_1/8.py", "exec"), cell)
    assert is_course_code(origin(cell["make"](traced)))  # through a closure


def test_a_scripted_reference_is_the_course_code():
    from course_utils.checks.masking_softmax_temperature.cross_entropy import cross_entropy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.script is deprecated, and still there to be used
        scripted = torch.jit.script(cross_entropy)  # the one reference TorchScript compiles as it stands
    assert is_course_code(origin(scripted))
    cell: dict = {"__name__": "__main__"}
    exec(compile("def cross_entropy(logits, targets, s=None):\n    return s(logits, targets)\n",
                 "/tmp/ipykernel_1/11.py", "exec"), cell)
    cell["cross_entropy"].__defaults__ = (scripted,)
    assert is_course_code(origin(cell["cross_entropy"]))  # through a default


def test_the_students_own_traced_or_scripted_code_is_theirs():
    cell: dict = {"__name__": "__main__", "torch": torch}
    exec(compile("def mine(x):\n    z = x - x.max(-1, keepdim=True).values\n    return z.exp() / z.exp().sum(-1, "
                 "keepdim=True)\n", "/tmp/ipykernel_1/9.py", "exec"), cell)
    assert not is_course_code(origin(_traced(cell["mine"])))
    cell["traced"] = _traced(cell["mine"])
    exec(compile("def stable_softmax(x):\n    return traced(x)\n", "/tmp/ipykernel_1/10.py", "exec"), cell)
    assert not is_course_code(origin(cell["stable_softmax"]))
