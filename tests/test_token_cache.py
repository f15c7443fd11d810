"""``gpt.token_cache``: the small GPT's tokenizer and corpus ids are built once and read back by later
processes; a damaged file is rebuilt, a changed tokenisation source gets a new key, a read-only folder
still answers, and what the cache returns equals what is computed afresh."""

import pytest
import torch

from course_utils.gpt import token_cache
from course_utils.gpt.checkpoint import corpus_tokens, small_gpt_tokenizer
from course_utils.gpt.token_cache import cache_key, cached


def _save(value, path):
    path.write_text(str(value), encoding="utf-8")


def _load(path):
    text = path.read_text(encoding="utf-8")
    if not text.isdigit():
        raise ValueError(f"{path} is damaged")
    return int(text)


def test_built_once_then_read_and_a_damaged_file_is_rebuilt(tmp_path):
    builds = []

    def build():
        builds.append(1)
        return 42

    assert cached("answer.txt", build, _save, _load, tmp_path) == 42
    assert cached("answer.txt", build, _save, _load, tmp_path) == 42
    assert len(builds) == 1
    (stored,) = tmp_path.glob("*-answer.txt")
    assert stored.name == f"{cache_key()}-answer.txt" and not list(tmp_path.glob("*.tmp"))
    stored.write_text("garbage", encoding="utf-8")
    assert cached("answer.txt", build, _save, _load, tmp_path) == 42 and len(builds) == 2
    assert stored.read_text(encoding="utf-8") == "42"


def test_a_changed_tokenisation_source_changes_the_key(tmp_path, monkeypatch):
    (tmp_path / "trainer.py").write_text("MERGES = 1\n", encoding="utf-8")
    monkeypatch.setattr(token_cache, "TOKENISATION_SOURCES", tmp_path)
    before = cache_key()
    (tmp_path / "trainer.py").write_text("MERGES = 2\n", encoding="utf-8")
    assert cache_key() != before and len(before) == 16


def test_a_folder_that_cannot_be_written_still_answers(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    unwritable = blocker / "cache"  # a folder under a file: mkdir fails with an OSError, as on a read-only install
    assert cached("x.txt", lambda: 7, _save, _load, unwritable) == 7
    assert cached("x.txt", lambda: 8, _save, _load, unwritable) == 8  # nothing was stored: built again


def test_a_bad_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="name"):
        cached("a/b", lambda: 1, _save, _load, tmp_path)


def test_the_cached_ids_are_the_fresh_encoding():
    ids = corpus_tokens()
    assert ids.dtype == torch.long and ids.ndim == 1
    assert torch.equal(ids, corpus_tokens(small_gpt_tokenizer()))  # encoded afresh with the same tokenizer
