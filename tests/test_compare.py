"""describe_mismatch: agreement within tolerance, and a readable first difference otherwise."""

import numpy as np
import pytest
import torch

from course_utils.checks.compare import describe_mismatch
from course_utils.tolerances import tolerance


def test_equal_values_match():
    assert describe_mismatch(torch.ones(2, 3), torch.ones(2, 3) + 1e-8) is None
    assert describe_mismatch({"a": [1, 2.0]}, {"a": [1, 2.0]}) is None
    assert describe_mismatch(np.arange(3.0), torch.arange(3.0, dtype=torch.float64)) is None
    assert describe_mismatch(float("nan"), float("nan")) is None


@pytest.mark.parametrize("expected,got,fragment", [
    (torch.ones(2, 3), torch.ones(3, 2), "expected shape (2, 3)"),
    (torch.ones(2), [1.0, 1.0], "expected a tensor"),
    (torch.ones(2), torch.tensor([1.0, float("nan")]), "contains NaN"),
    (torch.ones(2), torch.tensor([1.0, 1.5]), "at index (1,) expected 1, got 1.5"),
    ([1, 2], [1], "length 2"),
    ({"a": 1}, {}, "missing key 'a'"),
    ({"a": 1}, {"a": 1, "b": 2}, "unexpected key 'b'"),
    (3, 3.5, "whole number 3"),
    ("low", "lo", "expected 'low'"),
    (torch.tensor([1, 2]), torch.tensor([1, 3]), "first at index (1,)"),
])
def test_mismatches_are_described(expected, got, fragment):
    message = describe_mismatch(expected, got)
    assert message is not None and fragment in message


def test_tolerance_table_is_looser_for_lower_precision():
    assert tolerance(torch.float64) < tolerance(torch.float32) < tolerance(torch.float16) < tolerance(torch.bfloat16)
    assert tolerance(torch.float32, "cuda")[0] >= tolerance(torch.float32, "cpu")[0]
