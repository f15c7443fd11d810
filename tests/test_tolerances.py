"""The tolerance tables' helpers: printing a value that may be zero up to rounding."""

from __future__ import annotations

import pytest
import torch

from course_utils.tolerances import format_up_to_rounding


@pytest.mark.parametrize("noise", [0.0, 3.29e-7, -6.66e-7, 9.9e-7])
def test_rounding_noise_prints_the_same_on_every_machine(noise):
    assert format_up_to_rounding(noise) == "0 up to rounding (< 1e-6)"
    assert format_up_to_rounding(torch.tensor(noise)) == "0 up to rounding (< 1e-6)"


def test_real_values_print_with_their_format():
    assert format_up_to_rounding(3.12) == "3.12e+00"
    assert format_up_to_rounding(2e-6) == "2.00e-06"  # at or above the floor: a value, not noise
    assert format_up_to_rounding(0.5, spec=".3f") == "0.500"
    assert format_up_to_rounding(3e-6, floor=1e-5) == "0 up to rounding (< 1e-5)"


@pytest.mark.parametrize("value", ["0.1", None, float("nan"), True, torch.ones(2)])
def test_bad_values_are_refused_by_name(value):
    with pytest.raises(TypeError, match="value must be a real number"):
        format_up_to_rounding(value)


@pytest.mark.parametrize("floor", [0.0, -1e-6, float("inf"), True])
def test_bad_floors_are_refused_by_name(floor):
    with pytest.raises(ValueError, match="floor"):
        format_up_to_rounding(1.0, floor=floor)
