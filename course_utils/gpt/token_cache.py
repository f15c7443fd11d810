"""A disk cache for what several processes would otherwise recompute: the small GPT's tokenizer and token ids.

Training notebook 09's 512-id BPE on the corpus and encoding the corpus with it take seconds each, and
every notebook and test process that trains, replays or samples the small GPT needs both. ``cached``
keeps one file per result in ``data/cache/`` (git-ignored, beside the corpus's own cache), named by a key
of everything the result depends on (``cache_key``: the corpus's SHA-256 and the source of the course's
tokenisation code, so a changed trainer never reads a stale file). Files are written atomically (several
processes may build at once), one that cannot be read is rebuilt, and a read-only install (the grader's
sandbox) builds every time.
Leaves out what to cache (``gpt.checkpoint`` decides) and any eviction: each file is a few MB.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
from pathlib import Path
from typing import Callable, TypeVar

from course_utils.corpus import DATA_DIR, manifest

CACHE_DIR = DATA_DIR / "cache"
TOKENISATION_SOURCES = Path(__file__).resolve().parents[1] / "tokenisation"
T = TypeVar("T")


def cache_key() -> str:
    """16 hex digits of SHA-256 over the corpus's committed hash and every tokenisation source file."""
    digest = hashlib.sha256(manifest()["sha256"].encode())
    for source in sorted(TOKENISATION_SOURCES.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


def cached(name: str, build: Callable[[], T], save: Callable[[T, Path], None], load: Callable[[Path], T],
           folder: Path = CACHE_DIR) -> T:
    """``load`` the file ``name``-key in ``folder`` if it is there and readable, else ``build``, ``save`` and return it.

    ``save(value, path)`` writes a file ``load(path)`` reads back; ``load`` raises ``ValueError``,
    ``OSError``, ``RuntimeError``, ``EOFError`` or an unpickling error for a damaged file, which is rebuilt.
    """
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"name must be a file name without '/', got {name!r}")
    path = Path(folder) / f"{cache_key()}-{name}"
    if path.is_file():
        try:
            return load(path)
        except (ValueError, OSError, RuntimeError, EOFError, pickle.UnpicklingError):
            pass  # damaged or from an interrupted writer: build it again
    value = build()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save(value, tmp)
        tmp.replace(path)
    except OSError:  # read-only: the cache only saves time
        with contextlib.suppress(OSError):
            tmp.unlink()
    return value
