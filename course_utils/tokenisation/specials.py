"""Special tokens: strings such as ``"<|endoftext|>"`` that stand for one id and are never cut or merged.

A text is split at every occurrence of a special token *before* pre-tokenisation, both when BPE is
trained (so no merge is learned from a special token's bytes or across its edges) and when text is
encoded with the token allowed (tiktoken's ``allowed_special``): ``split_specials("a<|x|>b", ["<|x|>"])``
-> ``[("a", False), ("<|x|>", True), ("b", False)]``.

A set of special tokens is refused (ValueError) when two of them could overlap in a text: one inside
another (``"<|a|>"`` and ``"a"``), or the end of one being the start of another or of itself
(``"<|x"`` and ``"x|>"``). Then every occurrence stands apart, the split does not depend on which
token is looked for first, and a stream can be cut between two occurrences (``streaming.py``).
Leaves out: ids (``byte_bpe.py`` and ``ByteBPETokenizer.train`` give them) and added tokens that are
not special (Hugging Face's ``AddedToken`` with its stripping options).
"""

from __future__ import annotations

from collections.abc import Iterator

import regex


def check_special_tokens(tokens, name: str = "special_tokens") -> list[str]:
    """The tokens as a list after checking them: ``check_special_tokens(("<|a|>",))`` -> ``['<|a|>']``."""
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
        raise TypeError(f"{name} must be a list of str (e.g. ['<|endoftext|>']), got {type(tokens).__name__}")
    tokens = list(tokens)
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(token).__name__} {token!r}")
        if not token:
            raise ValueError(f"{name}[{i}] is the empty string: a special token needs at least one character")
    repeated = sorted({t for t in tokens if tokens.count(t) > 1})
    if repeated:
        raise ValueError(f"{name} lists {repeated} more than once")
    for a in tokens:
        for b in tokens:
            if a != b and a in b:
                raise ValueError(f"{name}: {a!r} is inside {b!r}, so a text holding {b!r} could be split either way")
            overlap = next((k for k in range(1, min(len(a), len(b))) if a[-k:] == b[:k]), None)
            if overlap is not None:
                raise ValueError(
                    f"{name}: {a!r} ends with {a[-overlap:]!r}, which starts {b!r}; occurrences could overlap "
                    f"(as in {a + b[overlap:]!r})"
                )
    return tokens


def special_pattern(tokens: list[str]) -> regex.Pattern | None:
    """A pattern that finds every occurrence of ``tokens`` (checked ones), or None for no tokens."""
    if not tokens:
        return None
    return regex.compile("|".join(regex.escape(t) for t in sorted(tokens, key=len, reverse=True)))


def split_specials(text: str, tokens: list[str]) -> Iterator[tuple[str, bool]]:
    """``(piece, is_special)`` in order, the ordinary pieces non-empty; one ordinary piece when no token occurs."""
    pattern = special_pattern(tokens)
    start = 0
    if pattern is not None:
        for match in pattern.finditer(text):
            if match.start() > start:
                yield text[start : match.start()], False
            yield match.group(), True
            start = match.end()
    if start < len(text):
        yield text[start:], False
