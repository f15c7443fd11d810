"""The thread-count helpers: ``torch_threads`` pins the count for its block and always puts it back
(after an exception too), rejects a count that is not a positive int before touching anything, and
``threads_for_load`` picks one thread on a busy machine and never passes ``$OMP_NUM_THREADS``."""

import pytest
import torch

from course_utils.env.threads import threads_for_load, torch_threads


@pytest.fixture
def two_threads():
    """Start every test from 2 threads (not the count the pinned block uses), and leave as found."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(before)


def test_pins_the_count_inside_and_restores_it_after(two_threads):
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == two_threads


def test_restores_the_count_after_an_exception(two_threads):
    with pytest.raises(RuntimeError, match="boom"):
        with torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("boom")
    assert torch.get_num_threads() == two_threads


def test_none_leaves_the_count_and_still_restores_what_the_block_changed(two_threads):
    with torch_threads(None):
        assert torch.get_num_threads() == two_threads
        torch.set_num_threads(1)
    assert torch.get_num_threads() == two_threads


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-1, ValueError), (2.0, TypeError), (True, TypeError),
                                        ("1", TypeError)])
def test_rejects_a_count_that_is_not_a_positive_int(two_threads, bad, error):
    with pytest.raises(error, match="cpu_threads must be a positive int"):
        with torch_threads(bad, name="cpu_threads"):
            pytest.fail("the block must not run")
    assert torch.get_num_threads() == two_threads


def test_threads_for_load(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads_for_load(9.0, 2) == 1 and threads_for_load(0.5, 2) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # a limit (the test workers set one) is never exceeded
    assert threads_for_load(0.5, 2) == 1 and threads_for_load(0.5, 16) == 1
    for ignored in ("", "0", "lots"):  # not a positive count: no limit
        monkeypatch.setenv("OMP_NUM_THREADS", ignored)
        assert threads_for_load(0.5, 4) == 4


def test_training_and_notebook_09_still_import_threads_for_load_from_training():
    from course_utils.gpt import training

    assert training.threads_for_load is threads_for_load
