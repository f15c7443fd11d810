"""Number hygiene: every number with three or more significant digits in a notebook's prose must be
printed by some cell output of the same notebook, so prose cannot drift away from what the code
computes.

Rules (one place, so every notebook is judged alike):
- A prose number is a run of digits with optional thousands commas, decimals, exponent, and a
  ``k``/``M``/``B`` suffix (``50,257``, ``0.772``, ``128k``, ``1e-5``); digits glued to letters or
  underscores (``float32``, ``cl100k_base``, ``W_2``, ``GPT-4o``) are names, not numbers. URLs, link
  targets and HTML tags are skipped.
- Significant digits: leading zeros never count, trailing zeros of a whole number do not count
  (``10,000`` has one, ``512`` three, ``0.0200`` three). Fewer than three: not checked.
- A prose number is printed when some number in any output (text, ``text/plain``, ``text/markdown``,
  ``text/html``), rounded to the prose number's last shown digit, equals it: ``0.772`` matches
  ``0.77204``, ``9,647`` matches ``9647.3``, ``128k`` and ``128,000`` match ``128256``. Signs are
  ignored; ``77.2%`` also matches ``0.772``.
- Inputs and citations (``d_model = 512``, a year, an arXiv id) go on the notebook's own allow-list:
  ``nb.metadata["course"]["numbers_allowed"] = {"512": "d_model, an input", ...}``, at most
  ``MAX_ALLOWED`` entries, each with a reason and each still used in the prose.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

import nbformat
import pytest

from notebook_tools import TOTALS_LINE, course_notebooks, read

MAX_ALLOWED = 25
SCALE = {"": 1, "k": 10**3, "M": 10**6, "B": 10**9}
OUTPUT_MIMES = ("text/plain", "text/markdown", "text/html", "text/latex")

# A number not glued to a name: no letter/digit/underscore/dot before it, no letter/underscore
# after it (except a k/M/B scale suffix that itself ends the word).
PROSE_NUMBER = re.compile(
    r"(?<![\w.])(?<!\d,)"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+−]?\d+)?)"
    r"(?P<scale>[kMB](?![\w]))?"
    r"(?![\w])(?!\.\d)(?!,\d{3})"
)
OUTPUT_NUMBER = re.compile(r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)([kMB](?![A-Za-z]))?")
SKIPPED = [
    re.compile(r"https?://\S+"),                 # URLs
    re.compile(r"\]\([^)]*\)"),                  # markdown link / image targets
    re.compile(r"<[^>]+>"),                      # HTML tags and their attributes
    re.compile(r"\battachment:\S+"),
]


def significant_digits(text: str) -> int:
    """Significant digits of a prose number: ``'0.0200'`` -> 3, ``'10,000'`` -> 1, ``'512'`` -> 3."""
    mantissa = re.split(r"[eE]", text.replace(",", ""))[0]
    if "." in mantissa:
        digits = mantissa.replace(".", "").lstrip("0")
    else:
        digits = mantissa.lstrip("0").rstrip("0")
    return len(digits)


def _decimal(text: str) -> Decimal:
    return Decimal(text.replace(",", "").replace("−", "-"))


def _quantum(text: str, scale: int) -> Decimal:
    """The place value of the last shown digit: ``'0.772'`` -> 0.001, ``'128'`` with k -> 1000."""
    mantissa = re.split(r"[eE]", text.replace(",", ""))[0]
    exponent = int(re.split(r"[eE]", text.replace("−", "-"))[1]) if re.search(r"[eE]", text) else 0
    if "." in mantissa:
        place = -len(mantissa.split(".")[1])
    else:
        place = len(mantissa) - len(mantissa.rstrip("0")) if mantissa.strip("0") else 0
    return Decimal(10) ** (place + exponent) * scale


def prose_numbers(markdown: str) -> list[str]:
    """The numbers of a markdown cell worth checking: ``'d_vocab = 50,257 in float32'`` -> ``['50,257']``."""
    for pattern in SKIPPED:
        markdown = pattern.sub(" ", markdown)
    found = []
    for match in PROSE_NUMBER.finditer(markdown):
        if significant_digits(match.group("num")) >= 3:
            found.append(match.group("num") + (match.group("scale") or ""))
    return found


def output_numbers(nb) -> list[Decimal]:
    """Every number any cell output of ``nb`` prints, commas removed: ``'50,257 rows'`` -> [50257];
    a k/M/B suffix adds the scaled value too: ``'213M'`` -> [213, 213000000]."""
    values = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts = [out.get("text", "")]
            texts += [out.get("data", {}).get(mime, "") for mime in OUTPUT_MIMES]
            for text in texts:
                text = "".join(text) if isinstance(text, list) else text
                for token, scale in OUTPUT_NUMBER.findall(text):
                    try:
                        values.append(_decimal(token))
                    except InvalidOperation:
                        continue
                    if scale:  # "175B" printed: both 175 and 175e9 count
                        values.append(values[-1] * SCALE[scale])
    return values


def is_printed(number: str, printed: list[Decimal]) -> bool:
    """Whether ``number`` (as written in prose) equals some printed value rounded to its shown digits."""
    scale = SCALE[number[-1]] if number[-1] in "kMB" else 1
    text = number[:-1] if scale != 1 else number
    value = abs(_decimal(text)) * scale
    quantum = _quantum(text, scale)
    return any(_rounds_to(abs(candidate), value, quantum) or _rounds_to(abs(candidate), value / 100, quantum / 100)
               for candidate in printed)


def _rounds_to(candidate: Decimal, value: Decimal, quantum: Decimal) -> bool:
    half = quantum / 2
    # Round half either way: 0.7725 may be shown as 0.772 or 0.773.
    return value - half <= candidate <= value + half


def stale_numbers(nb) -> list[tuple[int, str]]:
    """(cell index, number) for every prose number no output prints and the allow-list does not hold."""
    printed = output_numbers(nb)
    allowed = set(nb.metadata.get("course", {}).get("numbers_allowed", {}))
    stale = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for number in prose_numbers(TOTALS_LINE.sub("", cell.source)):  # the totals: test_exercise_lines
            if number not in allowed and not is_printed(number, printed):
                stale.append((index, number))
    return stale


def allow_list_problems(nb) -> list[str]:
    allowed = nb.metadata.get("course", {}).get("numbers_allowed", {})
    problems = []
    if not isinstance(allowed, dict):
        return ["numbers_allowed must map each number to the reason it is allowed"]
    if len(allowed) > MAX_ALLOWED:
        problems.append(f"{len(allowed)} allowed numbers (at most {MAX_ALLOWED}): print them instead")
    used = {n for c in nb.cells if c.cell_type == "markdown" for n in prose_numbers(c.source)}
    for number, reason in allowed.items():
        if not isinstance(reason, str) or not reason.strip():
            problems.append(f"{number!r} has no reason")
        if number not in used:
            problems.append(f"{number!r} is allowed but no markdown cell uses it (remove it)")
    return problems


NOTEBOOKS = course_notebooks()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_prose_numbers_are_printed_by_the_notebook(path):
    stale = stale_numbers(read(path))
    assert not stale, (
        "numbers in markdown that no cell output prints (compute them in a cell, word the prose so it "
        "cannot go stale, or put a true input on numbers_allowed): "
        + ", ".join(f"cell {i}: {n}" for i, n in stale))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_allow_list_is_small_explained_and_used(path):
    assert not allow_list_problems(read(path))


# --- The rule itself, tested both ways ---------------------------------------------------------

def _notebook(markdown: str, printed: str, allowed: dict | None = None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(markdown), nbformat.v4.new_code_cell("print(x)")]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    if allowed is not None:
        nb.metadata["course"] = {"numbers_allowed": allowed}
    return nb


def test_a_stale_number_is_flagged():
    nb = _notebook("The loss is 0.772 after training.", "loss 0.8123\n")
    assert stale_numbers(nb) == [(0, "0.772")]


def test_a_printed_number_passes_at_its_shown_digits():
    assert stale_numbers(_notebook("The loss is 0.772 after training.", "loss 0.77204\n")) == []
    assert stale_numbers(_notebook("The loss is 0.772.", "loss 0.7730\n")) == [(0, "0.772")]


def test_thousands_separators_and_scale_suffixes():
    assert stale_numbers(_notebook("GPT-2 has 50,257 tokens.", "50257\n")) == []
    assert stale_numbers(_notebook("GPT-2 has 50257 tokens.", "d_vocab = 50,257\n")) == []
    assert stale_numbers(_notebook("Llama 3 has a 128k vocabulary.", "128256\n")) == []
    assert stale_numbers(_notebook("Llama 3 has a 128k vocabulary.", "100277\n")) == [(0, "128k")]
    assert stale_numbers(_notebook("It is 9,647 times slower.", "ratio 9647.31\n")) == []
    assert stale_numbers(_notebook("It has 213M parameters.", "params: 212.6M\n")) == []
    assert stale_numbers(_notebook("It has 213M parameters.", "params: 212,571,392\n")) == []
    assert stale_numbers(_notebook("It has 213M parameters.", "params: 212.4M\n")) == [(0, "213M")]


def test_percentages_match_fractions():
    assert stale_numbers(_notebook("It keeps 77.2% of the mass.", "0.7721\n")) == []


def test_names_short_numbers_and_links_are_not_numbers():
    text = ("float32, cl100k_base, o200k_base, GPT-4o, W_2, 10,000 and 0.5 and 12 heads; "
            "[paper](https://arxiv.org/abs/1706.03762) <img width=\"600\">")
    assert prose_numbers(text) == []
    assert significant_digits("0.0200") == 3 and significant_digits("10,000") == 1


def test_the_allow_list_holds_inputs_but_must_be_used_and_explained():
    nb = _notebook("We pick d_model = 512.", "nothing\n", allowed={"512": "d_model, an input"})
    assert stale_numbers(nb) == [] and allow_list_problems(nb) == []
    unused = _notebook("We pick d_model = 512.", "nothing\n", allowed={"512": "input", "768": "input"})
    assert allow_list_problems(unused) == ["'768' is allowed but no markdown cell uses it (remove it)"]
    assert allow_list_problems(_notebook("d = 512", "", allowed={"512": ""})) == ["'512' has no reason"]
