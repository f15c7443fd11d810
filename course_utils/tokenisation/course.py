"""The course's own byte-level BPE tokenizer, and the piece-by-piece view the widget shows.

``course_tokenizer()`` trains GPT-2-style byte-level BPE on the whole course corpus (about 5 MB of
Shakespeare) up to ``COURSE_VOCAB_SIZE`` ids, the last few being ``SPECIAL_TOKENS``; the result is
cached for the session. ``split_for_display`` cuts a text into (piece, id) pairs for any of the
widget's tokenizers: Unicode characters (id = code point), UTF-8 bytes (id = byte value), the
course BPE, GPT-2, cl100k_base or o200k_base.

Leaves out: the widget itself (``course_utils/viz/tokenisation.py``).
"""

from __future__ import annotations

from course_utils.corpus import load_corpus
from course_utils.tokenisation import real
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer

COURSE_VOCAB_SIZE = 2048
SPECIAL_TOKENS = ["<|bos|>", "<|eos|>", "<|pad|>", "<|mask|>", "<|im_start|>", "<|im_end|>"]
CHOICES = ("characters", "bytes", "course BPE", "GPT-2", "cl100k_base", "o200k_base")
_REAL = {"GPT-2": "gpt2", "cl100k_base": "cl100k_base", "o200k_base": "o200k_base"}


_TRAINED: dict[str, ByteBPETokenizer] = {}


def course_tokenizer(progress: bool = False) -> ByteBPETokenizer:
    """Byte-level BPE trained on the whole corpus (once per session; ``progress`` shows a bar):
    ``course_tokenizer().n_vocab`` -> 2048."""
    if "course" not in _TRAINED:
        _TRAINED["course"] = ByteBPETokenizer.train(
            load_corpus(), COURSE_VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, progress=progress
        )
    return _TRAINED["course"]


def show_bytes(piece: bytes) -> str:
    """A token's bytes as text, or as hex when they are not whole UTF-8 characters:
    ``show_bytes(b"caf")`` -> ``'caf'``; ``show_bytes(b"\\xf0\\x9f")`` -> ``'<f0 9f>'``."""
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return "<" + " ".join(f"{b:02x}" for b in piece) + ">"


def split_for_display(text: str, choice: str, course_bpe: ByteBPETokenizer | None = None) -> list[tuple[str, int]]:
    """(piece, id) pairs: ``split_for_display("hi", "bytes")`` -> ``[('h', 104), ('i', 105)]``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if choice not in CHOICES:
        raise ValueError(f"choice must be one of {list(CHOICES)}, got {choice!r}")
    if choice == "characters":
        return [(ch, ord(ch)) for ch in text]
    if choice == "bytes":
        return [(show_bytes(bytes([b])), b) for b in text.encode("utf-8")]
    tok = (course_bpe or course_tokenizer()) if choice == "course BPE" else real.load(_REAL[choice])
    ids = tok.encode(text, allowed_special="all")
    return [(show_bytes(piece), i) for piece, i in zip(tok.pieces(ids), ids)]


def words_per_token(text: str, n_tokens: int) -> float:
    """Whitespace-separated words per token: ``words_per_token("to be or", 4)`` -> 0.75."""
    if n_tokens <= 0:
        raise ValueError(f"n_tokens must be positive, got {n_tokens}")
    return len(text.split()) / n_tokens
