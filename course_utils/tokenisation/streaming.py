"""Encoding a text too large to hold: ``encode_iterable(tokenizer, lines)`` yields ids as the text streams in.

The ids equal ``tokenizer.encode("".join(lines), allowed_special)``: the pieces are joined exactly as
given (a file's lines keep their ``"\\n"``, nothing is added between pieces), so a chunk or a special
token that one piece starts and the next one ends (``"<|endof"`` + ``"text|>"``, ``"\\n"`` + ``"\\n"``,
``"tok"`` + ``"enisation"``) is encoded as in the whole text.

How: pieces are gathered until ``BLOCK`` characters have come, then the text read so far is encoded
up to the last place where it can be cut, and the rest waits for the next block. A place to cut is
just before a space between two letters (``"…the| cat…"``). Under GPT-2's, cl100k_base's and
o200k_base's split patterns no chunk reaches across such a space from the left (it can only start
one) and nothing matched before it looks past it, so the chunks of the text are the chunks of its
two sides; and an allowed special token is never cut, because a place counts only once it lies a
longest special token's length before the end of the text read, where any special token around it
has been read whole. Other split patterns are refused (ValueError): for them no such place is known.

Memory: the text held is at most a block, one piece and what followed the last place to cut (in prose,
a few words), and the ids of one block, whatever the length of the stream
(tests/test_tokenisation_stream.py measures it; ``benchmarks/RESULTS_tokenisation.md`` on 50 MB).
A stretch with no such place (a long run of digits, or Chinese text, which has no spaces) is held
until one comes. The tokenizer's cache of encoded chunks grows with the distinct chunks, not the
length, and is emptied at ``byte_bpe.CACHE_SIZE``.
Leaves out: decoding a stream (an id can end in the middle of a UTF-8 character).
"""

from __future__ import annotations

from collections.abc import Iterator

import regex

from course_utils.tokenisation.pretokenise import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN
from course_utils.tokenisation.specials import special_pattern

STREAMABLE_PATTERNS = {GPT2_PATTERN: "GPT-2", CL100K_PATTERN: "cl100k_base", O200K_PATTERN: "o200k_base"}
BLOCK = 1 << 14  # characters gathered before each cut: few enough to hold, enough to make a cut's cost small
_CUT = regex.compile(r"(?r)(?<=\p{L}) (?=\p{L})")  # a space between two letters, searched from the end


def _allowed(tokenizer, allowed_special) -> list[str]:
    """The special tokens ``encode`` would keep whole (it also checks ``allowed_special``)."""
    if allowed_special == "none":
        return []
    if allowed_special == "all":
        return list(tokenizer.special_tokens)
    tokenizer.encode("", allowed_special)  # the same checks and errors as encode's
    return list(allowed_special)


def last_cut(text: str, start: int, specials: regex.Pattern | None, longest: int) -> int:
    """The last place to cut ``text`` at or after ``start`` (0 if none): ``last_cut("a b c", 0, None, 0)`` -> 3."""
    limit = len(text) - longest  # a special token around a place before here has been read whole
    for match in _CUT.finditer(text, start, max(start, limit)):  # the last place first
        place = match.start()
        if specials is None or not any(m.start() < place < m.end()
                                       for m in specials.finditer(text, max(0, place - longest), place + longest)):
            return place
    return 0


def encode_iterable(tokenizer, lines, allowed_special="none") -> Iterator[int]:
    """Ids of ``"".join(lines)``, lazily:
    ``list(encode_iterable(tok, ["to be", " or not"]))`` == ``tok.encode("to be or not")``."""
    if isinstance(lines, (str, bytes)) or not hasattr(lines, "__iter__"):
        raise TypeError(
            f"lines must be an iterable of str (a list of lines, a generator, a file opened in text mode), "
            f"got {type(lines).__name__}" + ("; to encode one text, use encode(text)" if isinstance(lines, str) else "")
        )
    if tokenizer.pattern not in STREAMABLE_PATTERNS:
        raise ValueError(
            f"encode_iterable cuts a stream only where GPT-2's, cl100k_base's or o200k_base's split pattern "
            f"cannot reach across; {tokenizer.name}'s pattern {tokenizer.pattern[:40]!r}... is none of them: "
            f"use encode on the whole text"
        )
    allowed = _allowed(tokenizer, allowed_special)
    return _stream(tokenizer, lines, allowed, allowed_special)


def _stream(tokenizer, lines, allowed: list[str], allowed_special) -> Iterator[int]:
    specials, longest = special_pattern(allowed), max(map(len, allowed), default=0)
    held, searched = "", 0  # text read and not yet encoded; before `searched`, no place to cut is left
    block, size = [], 0  # pieces read since the last cut
    for i, piece in enumerate(lines):
        if not isinstance(piece, str):
            hint = " (open the file in text mode)" if isinstance(piece, bytes) else ""
            raise TypeError(f"lines[{i}] must be a str, got {type(piece).__name__}{hint}")
        block.append(piece)
        size += len(piece)
        if size < BLOCK:
            continue
        held, block, size = held + "".join(block), [], 0
        place = last_cut(held, searched, specials, longest)
        if place:
            yield from tokenizer.encode(held[:place], allowed_special)
            held = held[place:]
        # the places left lie within the last `longest` characters, or inside a special token, for good
        searched = max(0, len(held) - longest - 1)
    yield from tokenizer.encode(held + "".join(block), allowed_special)
