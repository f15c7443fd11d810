"""The shared argument checks: each accepts what it should, names the argument otherwise, and skips
value checks on the meta device."""

from __future__ import annotations

import pytest
import torch

from course_utils import validate as v


def test_positive_int_accepts_ints_and_names_the_argument():
    assert v.positive_int("n_heads", 4) == 4
    for bad in (0, -1, 2.0, True, "3", None):
        with pytest.raises(ValueError, match=r"n_heads must be a positive int, got"):
            v.positive_int("n_heads", bad)
    for bad in (2.0, True, False, "3", None):  # a wrong type is a TypeError too (ArgumentTypeError is both)
        with pytest.raises(TypeError, match=r"n_heads must be a positive int, got"):
            v.positive_int("n_heads", bad)
    with pytest.raises(ValueError) as excinfo:
        v.positive_int("n_heads", 0)
    assert not isinstance(excinfo.value, TypeError)  # a bad value is only a ValueError
    with pytest.raises(ValueError, match="d_head must be even, got 3"):
        v.positive_int("d_head", 3, even=True)
    with pytest.raises(ValueError, match=r"d_head must be even \(pairs\), got 3"):
        v.positive_int("d_head", 3, even=True, why="pairs")
    assert v.non_negative_int("k", 0) == 0
    with pytest.raises(ValueError, match="k must be a non-negative int"):
        v.non_negative_int("k", -2)
    with pytest.raises(TypeError, match="k must be a non-negative int, got True"):
        v.non_negative_int("k", True)
    assert v.integer("k", -3) == -3
    with pytest.raises(TypeError, match="k must be an int, got float"):
        v.integer("k", 1.0)


def test_int_in_names_the_bound():
    assert v.int_in("top_k", 4, 1, 4, high_name="d_vocab") == 4
    with pytest.raises(ValueError, match=r"^top_k must be between 1 and d_vocab=4, got 0$"):
        v.int_in("top_k", 0, 1, 4, high_name="d_vocab")
    with pytest.raises(ValueError, match=r"^prefix_len must be between 0 and 5, got 6$"):
        v.int_in("prefix_len", 6, 0, 5)
    with pytest.raises(TypeError, match="top_k must be an int, got bool"):
        v.int_in("top_k", True, 1, 4)


def test_numbers():
    assert v.number("t", 2) == 2.0 and isinstance(v.number("t", 2), float)
    assert v.positive_number("lr", 0.5) == 0.5
    for bad in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="lr must be a positive finite number"):
            v.positive_number("lr", bad)
    for bad in (True, "0.1", None):
        with pytest.raises(TypeError, match="lr must be a number"):
            v.positive_number("lr", bad)


def test_number_in_handles_open_and_closed_ends():
    assert v.number_in("p", 1, 0, 1, low_open=True) == 1.0
    with pytest.raises(ValueError, match=r"p must be in \(0, 1\], got 0.0"):
        v.number_in("p", 0.0, 0, 1, low_open=True)
    with pytest.raises(ValueError, match=r"sparsity must be in \[0, 1\)"):
        v.number_in("sparsity", 1.0, 0, 1, high_open=True)
    with pytest.raises(ValueError, match="must be in"):
        v.number_in("t", float("nan"), 0, 10)
    with pytest.raises(TypeError, match="t must be a number, got str"):
        v.number_in("t", "1", 0, 10)


def test_tensor_checks_name_the_argument_and_skip_values_on_meta():
    x = torch.tensor([1.0, float("nan")])
    with pytest.raises(ValueError, match="q contains NaN or inf"):
        v.float_tensor("q", x)
    assert v.float_tensor("q", torch.empty(3, device="meta")) is not None  # no data to check
    with pytest.raises(TypeError, match="q must be a floating-point tensor of shape"):
        v.float_tensor("q", torch.ones(2, dtype=torch.long), "(..., q_pos, d_head)")
    with pytest.raises(ValueError, match="at least 2 dims"):
        v.float_tensor("q", torch.ones(2), min_dims=2)
    with pytest.raises(TypeError, match="mask must be a torch.bool tensor"):
        v.bool_tensor("mask", torch.ones(2))
    with pytest.raises(ValueError, match=r"token_ids must lie in \[0, d_vocab=10\), got values from 3 to 10"):
        v.index_tensor("token_ids", torch.tensor([3, 10]), 10)
    assert v.index_tensor("token_ids", torch.empty(4, dtype=torch.long, device="meta"), 10) is not None
    with pytest.raises(TypeError, match="integer dtype"):
        v.index_tensor("token_ids", torch.ones(2), 10)
    assert v.int_tensor("counts", torch.ones(2, dtype=torch.int32)) is not None
    with pytest.raises(TypeError, match=r"counts must have an integer dtype \(why\), got torch.bool"):
        v.int_tensor("counts", torch.ones(2, dtype=torch.bool), " (why)")
    with pytest.raises(ValueError, match="q on cpu, k on meta"):
        v.same_device(q=torch.ones(1), k=torch.ones(1, device="meta"))


def test_int_at_least_keeps_the_modules_wording():
    assert v.int_at_least("k", 1, 1) == 1
    with pytest.raises(ValueError, match=r"^k must be at least 1, got 0$"):
        v.int_at_least("k", 0, 1)
    with pytest.raises(ValueError, match=r"^vocab_size must be at least 256 \(the byte alphabet\), got 8$"):
        v.int_at_least("vocab_size", 8, 256, why="the byte alphabet")
    for bad in (1.0, True, "2"):
        with pytest.raises(TypeError, match="k must be an int"):
            v.int_at_least("k", bad, 1)


def test_non_negative_number_and_one_of():
    assert v.non_negative_number("eps", 0) == 0.0 and isinstance(v.non_negative_number("eps", 0), float)
    for bad in (-1e-9, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="eps must be a non-negative finite number"):
            v.non_negative_number("eps", bad)
    with pytest.raises(TypeError, match="eps must be a number, got bool"):
        v.non_negative_number("eps", False)
    assert v.one_of("layout", "halves", ("interleaved", "halves")) == "halves"
    with pytest.raises(ValueError, match=r"^layout must be one of \('interleaved', 'halves'\), got 'rows'$"):
        v.one_of("layout", "rows", ("interleaved", "halves"))


def test_vocab_rows_names_the_argument_allows_masked_tokens_and_skips_values_on_meta():
    assert v.vocab_rows("logits", torch.tensor([0.0, float("-inf")])) is not None  # a masked token
    for bad, match in ((torch.tensor([0.0, float("nan")]), "logits contains NaN"),
                       (torch.tensor([0.0, float("inf")]), r"logits contains \+inf"),
                       (torch.full((2,), float("-inf")), "every entry of a row of logits is -inf"),
                       (torch.empty(2, 0), "non-empty last dimension")):
        with pytest.raises(ValueError, match=match):
            v.vocab_rows("logits", bad)
    with pytest.raises(TypeError, match="logits must be a floating-point tensor"):
        v.vocab_rows("logits", torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="probs must be non-negative"):
        v.vocab_rows("probs", torch.tensor([0.5, -0.1]), probs=True)
    with pytest.raises(ValueError, match="every row of probs must have some positive probability"):
        v.vocab_rows("probs", torch.zeros(2, 3), probs=True)
    assert v.vocab_rows("logits", torch.tensor([0.5, -0.1])) is not None  # negative logits are fine
    assert v.vocab_rows("probs", torch.empty(2, 3, device="meta"), probs=True) is not None  # no data to check
