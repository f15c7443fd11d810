"""Reading and writing the two published rank-file formats for byte-level BPE.

* tiktoken format (``cl100k_base.tiktoken``): one ``<base64 token bytes> <rank>`` per line,
  optionally gzip-compressed.
* GPT-2's original pair (``encoder.json`` + ``vocab.bpe``): tokens written in GPT-2's printable
  byte alphabet; ``vocab.bpe`` lists the merges in order, so merge i creates token ``256 + i``.

Both become one ``{token bytes: rank}`` dict; the rank is also the token id. A missing file or a
malformed line raises ValueError naming the file and the line.
Leaves out: SentencePiece ``.model`` files and HF ``tokenizer.json``.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from pathlib import Path

from course_utils.tokenisation.pretokenise import byte_to_printable


def _read_text(path, what: str) -> str:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"{what} must be a path (str or Path), got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{what}: rank file {str(path)!r} does not exist")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what}: {str(path)!r} is not UTF-8 text ({exc})") from exc


def parse_tiktoken(text: str, what: str = "path") -> dict[bytes, int]:
    """Parse tiktoken-format text: ``parse_tiktoken("IQ== 0\\n")`` -> ``{b'!': 0}``."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            if len(fields) != 2:
                raise ValueError("expected two fields")
            token, rank = base64.b64decode(fields[0], validate=True), int(fields[1])
        except (ValueError, binascii.Error) as exc:
            raise ValueError(
                f"{what}: malformed line {number} {line[:60]!r}: expected '<base64 token> <integer rank>' ({exc})"
            ) from None
        if token in ranks:
            raise ValueError(f"{what}: line {number} repeats token {token!r}")
        ranks[token] = rank
    if not ranks:
        raise ValueError(f"{what}: the rank file holds no tokens")
    return ranks


def load_tiktoken_file(path) -> dict[bytes, int]:
    """``{token bytes: rank}`` from a ``.tiktoken`` file (plain or gzip)."""
    return parse_tiktoken(_read_text(path, "path"), what=f"path {str(path)!r}")


def load_gpt2_files(encoder_json, vocab_bpe) -> dict[bytes, int]:
    """``{token bytes: rank}`` from GPT-2's ``encoder.json`` and ``vocab.bpe``.

    Example: the result maps ``b" the"`` to 262. Special tokens (``<|endoftext|>``) are dropped;
    every merge line of ``vocab.bpe`` must agree with the id in ``encoder.json``.
    """
    decode = {ch: b for b, ch in byte_to_printable().items()}
    try:
        encoder = json.loads(_read_text(encoder_json, "encoder_json"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"encoder_json: {str(encoder_json)!r} is not valid JSON ({exc})") from None
    if not isinstance(encoder, dict):
        raise ValueError(f"encoder_json: expected a JSON object of token -> id, got {type(encoder).__name__}")
    ranks: dict[bytes, int] = {}
    for token, rank in encoder.items():
        if token.startswith("<|") and token.endswith("|>"):
            continue
        try:
            ranks[bytes(decode[ch] for ch in token)] = int(rank)
        except KeyError:
            raise ValueError(f"encoder_json: token {token!r} uses a character outside GPT-2's byte alphabet") from None
    lines = _read_text(vocab_bpe, "vocab_bpe").splitlines()
    merges = (
        [ln for ln in lines[1:] if ln.strip()]
        if lines and lines[0].startswith("#")
        else [ln for ln in lines if ln.strip()]
    )
    for i, line in enumerate(merges):
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"vocab_bpe: malformed merge {i + 1} {line!r}: expected two tokens")
        try:
            merged = bytes(decode[ch] for ch in parts[0] + parts[1])
        except KeyError:
            raise ValueError(
                f"vocab_bpe: merge {i + 1} {line!r} uses a character outside GPT-2's byte alphabet"
            ) from None
        if ranks.get(merged) != 256 + i:
            raise ValueError(
                f"vocab_bpe: merge {i + 1} {line!r} gives id {ranks.get(merged)} in encoder_json, expected {256 + i}"
            )
    return ranks


def dump_tiktoken(ranks: dict[bytes, int]) -> str:
    """The tiktoken-format text for ``ranks``: ``dump_tiktoken({b'!': 0})`` -> ``'IQ== 0\\n'``."""
    return "".join(
        f"{base64.b64encode(tok).decode()} {rank}\n" for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1])
    )
