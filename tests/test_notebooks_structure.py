"""Static rules for every notebook: exercises listed in metadata and checked, no pasted helpers,
no global-state edits, nothing that downloads, and no stored errors."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from course_utils.checks import all_exercises
from course_utils.lab.release.solutions import has_solution
from notebook_tools import check_cells, course_notebooks, output_text, read

NOTEBOOKS = course_notebooks()
EXERCISES = all_exercises()
MAX_HELPER_LINES = 10
FORBIDDEN = {
    r"\bsys\.path\b": "sys.path edits",
    r"\bos\.chdir\b|%cd\b": "changing directory",
    r"\brcParams\b|\bplt\.rc\(|matplotlib\.rc\(|plt\.style\.use": "global matplotlib settings",
    r"get_encoding\(|from_pretrained\(|hf_hub_download|urlopen|requests\.get|!pip|%pip|wget|curl ": "network access or installs",
}
ROOT = Path(__file__).resolve().parents[1]


def test_there_is_a_welcome_notebook():
    assert NOTEBOOKS and NOTEBOOKS[0].name == "00_welcome.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_exercises_in_metadata_match_the_check_cells(path):
    nb = read(path)
    listed = nb.metadata.get("course", {}).get("exercises", {})
    checked = {exercise for _, exercise, argument in check_cells(nb)
               if exercise in EXERCISES and argument == EXERCISES[exercise].expected_name}
    assert set(listed) == checked, f"metadata lists {sorted(listed)}, check cells call {sorted(checked)}"
    for name, spec in listed.items():
        assert name in EXERCISES, f"no check module defines exercise {name!r}"
        assert isinstance(spec.get("points"), (int, float)) and spec["points"] > 0
        defining = [c for c in nb.cells if c.cell_type == "code" and has_solution(c.source)
                    and re.search(rf"^(def|class) {EXERCISES[name].expected_name}\b", c.source, re.M)]
        assert defining, f"no solution cell defines {EXERCISES[name].expected_name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_pasted_helpers_outside_exercise_cells(path):
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type != "code" or has_solution(cell.source):
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                length = node.end_lineno - node.lineno + 1
                assert length <= MAX_HELPER_LINES, (
                    f"cell {index} defines {node.name} ({length} lines): move it into course_utils")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_global_state_edits_or_downloads(path):
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type == "code":
            for pattern, what in FORBIDDEN.items():
                assert not re.search(pattern, cell.source), f"cell {index}: {what}"


def test_library_never_downloads():
    pattern = re.compile(FORBIDDEN[r"get_encoding\(|from_pretrained\(|hf_hub_download|urlopen|requests\.get|!pip|%pip|wget|curl "])
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "course_utils").rglob("*.py") if pattern.search(p.read_text())]
    assert not offenders


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_committed_executed_without_errors(path):
    code = [c for c in read(path).cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code if c.source.strip()), "commit notebooks executed"
    assert not [c for c in code if any(o.get("output_type") == "error" for o in c.outputs)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_cell_relies_on_a_trailing_semicolon(path):
    """nbval runs cells with store_history=False, and IPython decides whether ';' silences the last
    value from the history, so under nbval `plot(...);` shows the figure twice (once as the cell's
    value, once from the inline backend) and the stored output no longer matches. Bind the value
    instead: `fig = plot(...)`."""
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type == "code" and cell.source.rstrip().endswith(";"):
            pytest.fail(f"cell {index} ends with ';' (write `fig = ...` or `_ = ...`): {cell.source.rstrip().splitlines()[-1]!r}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_cell_rebinds_an_exercise_name(path):
    """Importing the reference under the exercise's own name would make a re-run check grade the
    reference instead of the student's function: use the module (`positions.rope_rotate`)."""
    nb = read(path)
    names = {EXERCISES[n].expected_name for n in nb.metadata.get("course", {}).get("exercises", {}) if n in EXERCISES}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or has_solution(cell.source):
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(source)):
            bound = []
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bound = [alias.asname or alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                bound = [node.name]
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound = [node.id]
            clash = set(bound) & names
            assert not clash, f"cell {index} rebinds the exercise name(s) {sorted(clash)}"


HEADING = re.compile(r"^#{2,4} Exercise: (?P<title>.+?) \((?P<points>\d+(?:\.\d+)?) points?, difficulty (?P<difficulty>[123])/3, "
                     r"about (?P<minutes>\d+) min\)\s*$", re.M)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_exercise_heading_shows_points_difficulty_and_time(path):
    """`### Exercise: <title> (2 points, difficulty 2/3, about 10 min)` before the defining cell, as in the metadata."""
    nb = read(path)
    for name, spec in nb.metadata.get("course", {}).get("exercises", {}).items():
        assert spec.get("difficulty") in (1, 2, 3), f"{name}: metadata difficulty must be 1, 2 or 3"
        assert isinstance(spec.get("minutes"), int) and spec["minutes"] > 0, f"{name}: metadata minutes must be a positive int"
        defining = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and has_solution(c.source)
                        and re.search(rf"^(def|class) {EXERCISES[name].expected_name}\b", c.source, re.M))
        headings = [m for c in nb.cells[:defining] if c.cell_type == "markdown" for m in HEADING.finditer(c.source)]
        assert headings, f"{name}: no '### Exercise: ... (N points, difficulty D/3, about M min)' heading before cell {defining}"
        last = headings[-1]
        assert (float(last["points"]), int(last["difficulty"]), int(last["minutes"])) == (
            float(spec["points"]), spec["difficulty"], spec["minutes"]), f"{name}: heading {last.group(0)!r} vs metadata {spec}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_exercise_says_how_to_ask_for_a_hint(path):
    nb = read(path)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for name in nb.metadata.get("course", {}).get("exercises", {}):
        assert f'hint("{name}")' in markdown, f'{name}: no markdown cell tells the student to run hint("{name}")'


UNCOMPARED = "nbval-ignore-output"
WHY_NOT_COMPARED = re.compile(r"^# Output not compared by the tests: \S.*\.$")
# A number printed in scientific notation below 1e-5 is almost always rounding noise, which differs
# between processors, thread counts and devices: print it with tolerances.format_up_to_rounding.
# Not a setting (eps=1e-05) and not a threshold ("below 1e-12", "< 1e-6").
TINY = re.compile(r"(?<![=\w.])(?<!below )(?<!< )\d(\.\d+)?e-(0[5-9]|[1-9]\d)\b")
TINY_BUT_REAL = {  # (notebook, text): why the small number is a fact and not rounding noise
    ("02_embeddings_positions.ipynb", "distance 1.3e-07"): "sin 11 - sin 344 in float64 (noise ~1e-13)",
    ("01_tokenisation.ipynb", "lo · west 5e-05"): "a product of the unigram probabilities 0.01 and 0.005",
    ("01_tokenisation.ipynb", "lo · w · est 3e-07"): "0.01 · 0.001 · 0.03",
    ("01_tokenisation.ipynb", "l · o · west 5e-09"): "0.001 · 0.001 · 0.005",
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_uncompared_cell_says_why(path):
    """Only an output that honestly depends on the machine (a timing, a device, a run trained on
    `device`) may skip nbval's comparison, and its cell's first line says which (CONTRIBUTING.md)."""
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type == "code" and UNCOMPARED in cell.metadata.get("tags", []):
            first = cell.source.splitlines()[0] if cell.source else ""
            assert WHY_NOT_COMPARED.match(first), f"cell {index} is tagged {UNCOMPARED} but its first line is {first!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_compared_outputs_print_no_rounding_noise_and_no_device_samples(path):
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type != "code" or UNCOMPARED in cell.metadata.get("tags", []):
            continue
        for line in output_text(cell).splitlines():
            for match in TINY.finditer(line):
                allowed = any(text in line and match.group() in text for (nb, text) in TINY_BUT_REAL if nb == path.name)
                assert allowed, f"cell {index} prints {match.group()!r} ({line.strip()!r}): rounding noise?"
        # Stored samples come from a CPU generator: a CUDA generator draws other numbers.
        assert not re.search(r"Generator\(\s*device\s*=", cell.source), f"cell {index}: a generator on `device`"


def _sanitizer_patterns() -> dict[str, re.Pattern]:
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / "tests" / "nbval_sanitize.cfg")
    return {section: re.compile(config[section]["regex"]) for section in config.sections()}


def test_every_mask_is_used_and_every_masked_cell_says_so():
    """The sanitizer hides only what a cell declares machine-dependent, and has no unused (hence
    untested, possibly over-broad) pattern."""
    used = set()
    for path in NOTEBOOKS:
        for index, cell in enumerate(read(path).cells):
            if cell.cell_type != "code" or UNCOMPARED in cell.metadata.get("tags", []):
                continue
            text = output_text(cell)
            for name, pattern in _sanitizer_patterns().items():
                if pattern.search(text):
                    used.add(name)
                    assert "the tests mask it" in cell.source, f"{path.name} cell {index}: masked by {name!r} without saying so"
    assert used == set(_sanitizer_patterns()), f"unused masks: {set(_sanitizer_patterns()) - used}"
