"""Parsers for the widgets' readouts (the plain-text format of WIDGET_CONTRACT.md).

Covered: temperature (``TOKEN: 0.772``, ``entropy: 0.679 nats``, ``T = 1.000``), mask-editor rows,
the d_k viewer's statistics, the head viewer's ``k3 A: 0.250`` lines, the welcome slider, ``name: value``
fields (notebook 11's patching explorer) and logit-lens cells (``after block 2, position 5: 'ing' 0.812``).
Left out: anything that needs the browser (tests/browser/support.py).
"""

from __future__ import annotations

import ast
import re

_TOKEN_LINE = re.compile(r"^\s*(.+?)\s*:\s*(-?\d+\.\d+)\s*$")


def parse_probabilities(text: str) -> dict[str, float]:
    """Token lines ``TOKEN: 0.772`` of a readout, skipping ``entropy``/``T =`` lines.

    ``parse_probabilities("cat: 0.700\\ndog: 0.300\\nentropy: 0.611 nats")`` -> ``{'cat': 0.7, 'dog': 0.3}``.
    """
    probs = {}
    for line in text.splitlines():
        match = _TOKEN_LINE.match(line)
        if match and match.group(1).lower() not in ("entropy", "t"):
            probs[match.group(1)] = float(match.group(2))
    return probs


def parse_entropy(text: str) -> float:
    """``parse_entropy("entropy: 0.679 nats")`` -> ``0.679`` (AssertionError when absent)."""
    match = re.search(r"entropy\s*:\s*(-?\d+\.\d+)", text)
    assert match, f"no 'entropy: X nats' line in readout:\n{text}"
    return float(match.group(1))


def temperature_of(text: str) -> float:
    match = re.search(r"T\s*=\s*(\d+\.\d+)", text)
    assert match, f"no 'T = ...' line in the readout:\n{text}"
    return float(match.group(1))


def assert_no_nan(text: str, where: str) -> None:
    assert not re.search(r"\bnan\b", text, re.IGNORECASE), f"{where}: NaN shown in the readout:\n{text}"


def pattern_rows(text: str, n_keys: int) -> list[list[float]]:
    """The lines of the readout holding exactly ``n_keys`` numbers with 3 decimals."""
    rows = []
    for line in text.splitlines():
        if "WARNING" in line:
            continue
        numbers = [float(x) for x in re.findall(r"-?\d+\.\d{3}\b", line)]
        if len(numbers) == n_keys:
            rows.append(numbers)
    return rows


def dk_stats(text: str) -> dict[str, tuple[float, float]]:
    """``{'scaled': (mean max weight, mean entropy), 'unscaled': (...)}`` from the d_k readout."""
    stats = {}
    for name in ("scaled", "unscaled"):
        match = re.search(rf"^\s*{name}:.*?max weight\s*(\d+\.\d+).*?entropy\s*(\d+\.\d+)", text, re.MULTILINE)
        assert match, f"no '{name}: ... max weight X, ... entropy Y' line in the readout:\n{text}"
        stats[name] = (float(match.group(1)), float(match.group(2)))
    return stats


def dk_of(text: str) -> int | None:
    match = re.search(r"d_k\s*=\s*(\d+)", text)
    return int(match.group(1)) if match else None


def attended_weights(text: str) -> list[float]:
    """The ``k3 A: 0.250`` lines after ``attends to:`` in the head viewer's readout."""
    tail = text.split("attends to:", 1)
    assert len(tail) == 2, f"no 'attends to:' line in the readout:\n{text}"
    return [float(x) for x in re.findall(r"^\s*k\d+.*?:\s*(\d+\.\d+)\s*$", tail[1], re.MULTILINE)]


def welcome_probs(text: str) -> tuple[float, float, float]:
    match = re.search(r"logits \[(-?\d+\.\d+), .*probabilities \[(\d\.\d+), (\d\.\d+)\]", text)
    assert match, f"unexpected welcome readout: {text}"
    return tuple(float(g) for g in match.groups())


def parse_fields(text: str) -> dict[str, str]:
    """``name: value`` lines: ``parse_fields("row: into block 2\\nrestored fraction: 0.998")`` ->
    ``{'row': 'into block 2', 'restored fraction': '0.998'}`` (split at the first ``": "``)."""
    fields = {}
    for line in text.splitlines():
        name, sep, value = line.partition(": ")
        if sep:
            fields[name.strip()] = value.strip()
    return fields


_LENS_LINE = re.compile(r"^\s*(embedding|after block (\d+)), position (\d+): ('.*'|\".*\") (\d\.\d{3})\s*$")


def lens_cells(text: str) -> list[tuple[int, int, str, float]]:
    """The logit-lens lines as ``(layer, position, token, probability)``, layer 0 the embedding and
    ``i + 1`` after block ``i``; the token is the repr shown, evaluated:
    ``lens_cells("after block 0, position 5: 'ing' 0.812")`` -> ``[(1, 5, 'ing', 0.812)]``."""
    cells = []
    for line in text.splitlines():
        match = _LENS_LINE.match(line)
        if match:
            layer = 0 if match.group(2) is None else int(match.group(2)) + 1
            cells.append((layer, int(match.group(3)), ast.literal_eval(match.group(4)), float(match.group(5))))
    return cells
