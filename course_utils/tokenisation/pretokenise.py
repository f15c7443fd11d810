"""Pre-tokenisation: cutting text into chunks before BPE runs inside each chunk.

Byte-level BPE never merges across chunk boundaries, so the split pattern decides, for example,
that a leading space belongs to the word after it (``" cat"`` is one chunk). The three patterns
here are the published ones of GPT-2, cl100k_base and o200k_base, run with the ``regex`` package
(the standard ``re`` module lacks ``\\p{L}`` classes and possessive quantifiers).

Covers: the patterns, splitting, GPT-2's printable byte alphabet (a space shown as ``Ġ``).
Leaves out: SentencePiece-style ``▁`` handling and Unicode normalisation.
"""

from __future__ import annotations

from functools import lru_cache

import regex

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@lru_cache(maxsize=8)
def compiled(pattern: str) -> regex.Pattern:
    """The compiled form of a split pattern (cached)."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    return regex.compile(pattern)


def pretokenise(text: str, pattern: str = GPT2_PATTERN) -> list[str]:
    """Split text into chunks: ``pretokenise("Hello world!")`` -> ``['Hello', ' world', '!']``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return compiled(pattern).findall(text)


@lru_cache(maxsize=1)
def byte_to_printable() -> dict[int, str]:
    """GPT-2's map from each byte to a printable character: ``byte_to_printable()[32]`` -> ``'Ġ'``.

    Printable ASCII and Latin-1 bytes map to themselves; the other 68 bytes (space, control
    characters...) are shifted to code points 256, 257, ... so every byte is visible.
    """
    keep = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def visible(piece: bytes) -> str:
    """A token's bytes in GPT-2's printable alphabet: ``visible(b" cat")`` -> ``'Ġcat'``."""
    table = byte_to_printable()
    return "".join(table[b] for b in piece)
