"""Chinchilla's rule against the paper's own model (70B parameters, 1.4T tokens)."""

from __future__ import annotations

import pytest

from course_utils.counting.scaling import chinchilla_tokens, compute_optimal


def test_chinchilla_itself_is_twenty_tokens_per_parameter():
    assert chinchilla_tokens(70e9) == pytest.approx(1.4e12)
    n, d = compute_optimal(6 * 70e9 * 1.4e12)
    assert (n, d) == (pytest.approx(70e9), pytest.approx(1.4e12))


def test_compute_optimal_spends_the_whole_budget():
    for flops in (1.2e20, 3.14e23):
        n, d = compute_optimal(flops)
        assert 6 * n * d == pytest.approx(flops)
        assert d == pytest.approx(20 * n)
    assert compute_optimal(1.2e20) == (pytest.approx(1e9), pytest.approx(2e10))
    assert chinchilla_tokens(1e9, tokens_per_parameter=10) == pytest.approx(1e10)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="n_params"):
        chinchilla_tokens(0)
    with pytest.raises(ValueError, match="flops"):
        compute_optimal(-1.0)
    with pytest.raises(TypeError, match="tokens_per_parameter"):
        chinchilla_tokens(1e9, "20")
