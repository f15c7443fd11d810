"""The layout CONTRIBUTING.md promises, enforced:

- no library file passes 300 lines (Core, ``checks/``, ``lab/``, ``viz/`` alike);
- the architecture's import rules: Core (the root's building blocks and the concept packages) never
  imports ``viz``, ``checks``, ``lab``, ``env.device`` or ``env.check`` (it follows its inputs' device
  instead of picking one); ``checks`` never imports ``viz``;
- the import graph's rules (tests/import_graph.py): at most 15 modules at the root, no private name
  imported across a package boundary, no building block at the root importing a package, no circle;
- checks and figures are named after their notebook: ``checks/<notebook>/`` is a package with one
  file per exercise, ``checks/<notebook>/<exercise>.py`` defining exactly that exercise.

``layout_problems(package)`` does the scanning, so each rule is also shown failing on a planted file.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from import_graph import graph_problems
from notebook_tools import check_cells, course_notebooks, read

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_utils"
MAX_LINES = 300
NOT_CORE = {"__init__.py"}  # the root's own __init__ holds nothing but the version
NOT_CORE_FOLDERS = {"checks", "viz", "lab", "env"}  # env: the machine (device, threads, progress), not the maths
FORBIDDEN = {  # folder (None = Core) -> course_utils modules it must not import, and why
    None: ({"viz", "checks", "lab", "env.device", "env.check"}, "Core is the maths and follows its inputs' device"),
    "checks": ({"viz"}, "a check gives a verdict in text; figures belong to viz"),
}


def _area(path: Path, package: Path) -> str | None:
    """``None`` for a Core module, else the sub-package it sits in (``checks``, ``lab``, ``viz``, ...)."""
    parts = path.relative_to(package).parts
    if len(parts) > 1 and parts[0] in NOT_CORE_FOLDERS:
        return parts[0]
    return "top" if parts == (path.name,) and path.name in NOT_CORE else None


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def layout_problems(package: Path) -> list[str]:
    """Every file of ``package`` that passes the line limit or breaks an import rule, in words."""
    problems = []
    name = package.name
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package.parent)
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            problems.append(f"{where} has {lines} lines (limit {MAX_LINES}): split it by concept")
        rule = FORBIDDEN.get(_area(path, package))
        if rule is None:
            continue
        banned, why = rule
        first_import = {}  # banned area -> the first import that reaches it
        for module in sorted(_imported_modules(path)):
            parts = module.split(".")
            reached = [b for b in banned if parts[0] == name and parts[1 : 1 + b.count(".") + 1] == b.split(".")]
            if reached:
                first_import.setdefault(reached[0], module)
        problems += [f"{where} imports {module}: {why}" for module in first_import.values()]
    return problems


def test_no_library_file_passes_the_limit_or_breaks_an_import_rule():
    assert layout_problems(PACKAGE) == []


@pytest.mark.parametrize(
    "relative, text, expected",
    [
        ("course_utils/big.py", "x = 1\n" * (MAX_LINES + 1), f"has {MAX_LINES + 1} lines"),
        ("course_utils/lab/big.py", "x = 1\n" * (MAX_LINES + 1), f"has {MAX_LINES + 1} lines"),
        ("course_utils/maths.py", "from course_utils.viz.drawing import plot\n", "imports course_utils.viz"),
        ("course_utils/maths.py", "import course_utils.checks.core\n", "imports course_utils.checks.core"),
        ("course_utils/maths.py", "from course_utils.env.device import pick_device\n", "imports course_utils.env.device"),
        ("course_utils/gpt/maths.py", "from course_utils.env import check\n", "imports course_utils.env.check"),
        ("course_utils/maths.py", "from course_utils import lab\n", "imports course_utils.lab"),
        ("course_utils/checks/x/y.py", "from course_utils.viz import attention\n", "imports course_utils.viz"),
    ],
)
def test_the_layout_check_sees_a_planted_violation(tmp_path, relative, text, expected):
    planted = tmp_path / relative
    for folder in [*reversed(planted.relative_to(tmp_path).parents)][1:]:
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").touch()
    planted.write_text(text)
    (tmp_path / "course_utils" / "fine.py").write_text("x = 1\n" * (MAX_LINES - 1) + "from course_utils import softmax\n")
    problems = layout_problems(tmp_path / "course_utils")
    assert len(problems) == 1 and expected in problems[0], problems


def release_imports_of_grading(package: Path) -> list[str]:
    """Each import of ``<package>.lab.grading`` by a module under ``<package>/lab/release/``, in words: at the top,
    inside a function (a lazy import is still an arrow), relative, or through ``importlib.import_module``."""
    grading, found = f"{package.name}.lab.grading", []
    for path in sorted((package / "lab" / "release").rglob("*.py")):
        here = [package.name, *path.relative_to(package).parent.parts]  # the module's own package
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                names = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
                names = [str(node.args[0].value)]
            hit = next((n for n in names if n == grading or n.startswith(grading + ".")), None)
            if hit:
                found.append(f"{path.relative_to(package.parent)}:{node.lineno} imports {hit}")
    return found


def test_release_never_imports_grading(tmp_path):
    """The release wing (student version, workspace, exports) sits below the grader: grading may import it,
    never the other way round, so ``course-lab progress`` lives in ``lab/grading/``."""
    assert release_imports_of_grading(PACKAGE) == []
    release = tmp_path / "course_utils" / "lab" / "release"
    release.mkdir(parents=True)
    (release / "fine.py").write_text("from course_utils.lab.results import SubmissionResult\nimport course_utils.lab\n")
    (release / "planted.py").write_text(
        "import importlib\n\n\ndef later():\n    from course_utils.lab.grading.folder import grade_folder\n"
        "    from ..grading import feedback\n    from course_utils.lab import grading\n"
        "    return importlib.import_module('course_utils.lab.grading.standing')\n")
    assert release_imports_of_grading(tmp_path / "course_utils") == [
        "course_utils/lab/release/planted.py:5 imports course_utils.lab.grading.folder",
        "course_utils/lab/release/planted.py:6 imports course_utils.lab.grading",
        "course_utils/lab/release/planted.py:7 imports course_utils.lab.grading",
        "course_utils/lab/release/planted.py:8 imports course_utils.lab.grading.standing",
    ]


def _notebook_exercises(path: Path) -> list[str]:
    """The notebook's exercises in the order its check cells call them."""
    nb = read(path)
    graded = set(nb.metadata.get("course", {}).get("exercises", {}))
    in_order = [name for _, name, _ in check_cells(nb)]
    assert set(in_order) == graded, f"{path.name}: check cells {in_order} vs metadata {sorted(graded)}"
    return list(dict.fromkeys(in_order))


@pytest.mark.parametrize("path", course_notebooks(), ids=lambda p: p.name)
def test_checks_are_a_package_per_notebook_and_a_file_per_exercise(path):
    name = re.sub(r"^\d+_", "", path.stem)
    source = "\n".join(c.source for c in read(path).cells if c.cell_type == "code")
    carried = set(re.findall(r"from_sibling\(\"\d+_(\w+)\.ipynb\"", source))  # parts read from another notebook
    checks_used = set(re.findall(r"course_utils\.checks\.(\w+)", source)) - {name} - carried
    assert not checks_used, f"{path.name} imports checks of another notebook: {sorted(checks_used)}"
    exercises = _notebook_exercises(path)
    if not exercises:
        return
    folder = PACKAGE / "checks" / name
    assert (folder / "__init__.py").exists(), f"checks for {path.name} belong in the package checks/{name}/"
    files = sorted(p.stem for p in folder.glob("*.py") if not p.name.startswith("_"))
    assert files == sorted(exercises), f"checks/{name}/ should hold one file per exercise of {path.name}"
    package = importlib.import_module(f"course_utils.checks.{name}")
    assert list(package.EXERCISES) == exercises, "the package lists the notebook's exercises in notebook order"
    for exercise in exercises:
        module = importlib.import_module(f"course_utils.checks.{name}.{exercise}")
        assert list(module.EXERCISES) == [exercise], f"checks/{name}/{exercise}.py defines {list(module.EXERCISES)}"
        assert package.EXERCISES[exercise] is module.EXERCISES[exercise]
        assert callable(getattr(package, f"check_{exercise}", None)), f"checks.{name} exports check_{exercise}"


def test_the_import_graph_keeps_the_layouts_rules():
    """≤ 15 root modules, no private name across a package boundary, root blocks import no package, no circle."""
    assert graph_problems(PACKAGE) == []


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``course_utils`` under ``tmp_path`` holding ``files`` (relative path -> source)."""
    tmp_path.mkdir()
    for relative, text in {"course_utils/__init__.py": "", **files}.items():
        path = tmp_path / relative
        for folder in [*reversed(path.relative_to(tmp_path).parents)][1:]:
            (tmp_path / folder).mkdir(exist_ok=True)
            (tmp_path / folder / "__init__.py").touch()
        path.write_text(text)
    return tmp_path / "course_utils"


FINE = {  # a package module may use its sibling's private names; packages may import the root and each other
    "course_utils/softmax.py": "from course_utils.validate import x\n",
    "course_utils/validate.py": "x = 1\n",
    "course_utils/gpt/model.py": "from course_utils.gpt.fused import _fast\nfrom course_utils.softmax import x\n",
    "course_utils/gpt/fused.py": "from course_utils.counting.parameters import count\n_fast = 1\n",
    "course_utils/counting/parameters.py": "count = 1\n",
}


@pytest.mark.parametrize(
    "files, expected",
    [
        ({f"course_utils/m{i}.py": "" for i in range(13)}, "holds 16 modules (limit 15)"),
        ({"course_utils/checks/bpe.py": "from course_utils.gpt.fused import _fast\n"},
         "imports the private name _fast from course_utils.gpt.fused, across a package boundary"),
        ({"course_utils/masking.py": "from course_utils.gpt import model\n"},
         "course_utils.masking is a building block at the root but imports the package course_utils.gpt"),
        ({"course_utils/gpt/fused.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
          "    from course_utils.gpt.model import Block\n_fast = 1\n"},
         "import circle: course_utils.gpt.fused -> course_utils.gpt.model"),
        ({"course_utils/counting/parameters.py": "def count():\n    from course_utils.gpt import config\n",
          "course_utils/gpt/config.py": ""},
         "packages import each other in a circle: course_utils.counting <-> course_utils.gpt"),
    ],
    ids=["root modules", "private name", "root block imports a package", "circle", "package circle"],
)
def test_the_import_graph_check_sees_a_planted_violation(tmp_path, files, expected):
    assert graph_problems(_plant(tmp_path / "fine", FINE)) == []
    problems = graph_problems(_plant(tmp_path / "planted", {**FINE, **files}))
    assert len(problems) == 1 and expected in problems[0], problems
