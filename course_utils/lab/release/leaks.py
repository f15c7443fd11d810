"""Prove that no stub message or hint gives an exercise's solution away.

A text *leaks* a solution when it contains one of the solution's code lines (a line of at least
``LINE_TOKENS`` tokens, compared with whitespace removed) or any run of ``RUN_TOKENS`` consecutive
tokens of the solution's code. Tokens are identifiers, numbers and single punctuation marks, so
``"q @ k.transpose(-2, -1)"`` is 12 tokens while a hint in words ("divide by the square root of
the key width") shares no run of 8 with any code. Comments in the solution do not count.

``find_leak("use x.exp() / x.exp().sum(-1, keepdim=True)", ["return x.exp() / x.exp().sum(-1, keepdim=True)"])``
-> ``'x . exp ( ) / x .'``.

Leaves out: where the texts come from (``release.py`` collects stub messages, each exercise's
``hints`` and the notebook's ``<details>`` cells).
"""

from __future__ import annotations

import re

RUN_TOKENS = 8  # a run this long of the solution's tokens is the answer, not a hint
LINE_TOKENS = 5  # a solution line this long, quoted whole, is the answer
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d+(?:\.\d+)?|[^\sA-Za-z_0-9]")
_COMMENT = re.compile(r"#.*$", re.MULTILINE)


def tokens(text: str) -> list[str]:
    """``tokens("x.sum(dim=-1)")`` -> ``['x', '.', 'sum', '(', 'dim', '=', '-', '1', ')']``."""
    return _TOKEN.findall(text)


def _code_tokens(code: str) -> list[str]:
    return tokens(_COMMENT.sub("", code))


def find_leak(text: str, solutions: list[str], run: int = RUN_TOKENS) -> str | None:
    """The piece of a solution that ``text`` repeats, or ``None`` if it repeats none."""
    if not isinstance(run, int) or run < 2:
        raise ValueError(f"run must be an int >= 2, got {run!r}")
    text_tokens = tokens(text)
    squashed = "".join(text_tokens)
    for solution in solutions:
        for line in _COMMENT.sub("", solution).splitlines():
            line_tokens = tokens(line)
            if len(line_tokens) >= LINE_TOKENS and "".join(line_tokens) in squashed:
                return line.strip()
        code = _code_tokens(solution)
        grams = {tuple(code[i : i + run]) for i in range(len(code) - run + 1)}
        for i in range(len(text_tokens) - run + 1):
            if tuple(text_tokens[i : i + run]) in grams:
                return " ".join(text_tokens[i : i + run])
    return None
