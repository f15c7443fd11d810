"""What a student wrote in another notebook, carried into this one: its definitions, not its computations.

The GPT is built in one notebook (09), trained in the next (10) and sampled in the one after (11), so
notebooks 10 and 11 need the classes and functions the student wrote in 09. ``from_sibling(notebook,
names)`` reads that notebook from the folder this one runs in (the student's own copy sits beside it) and
runs only its top-level imports, ``def`` and ``class`` statements and assignments of plain literals
(``run_definitions``): the definitions land in one fresh namespace, so a class that calls the student's
``embed_tokens`` finds *their* ``embed_tokens``, while nothing slow or printed is run again (no check, no
plot, no training). A statement that fails is skipped and reported; a name that is not found is ``None``,
and the notebook then falls back to the course's part, saying so (``Sibling.summary``).

Cells with IPython syntax (``%magic``, ``!shell`` lines) are read without those lines; a cell that still does
not parse is skipped and reported. Leaves out: what the other notebook computed (its variables), which is
why only literal assignments are run, and checking the parts (the notebook's own check calls do that).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_definition(node: ast.stmt) -> bool:
    """An import, a def or class, or ``NAME = <a literal>`` (a constant the definitions may read)."""
    if isinstance(node, _DEFINITIONS):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        try:
            ast.literal_eval(node.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return all(isinstance(t, ast.Name) for t in targets)
    return False


def run_definitions(source: str, namespace: dict, filename: str = "<definitions>") -> list[str]:
    """Run ``source``'s top-level definitions (see ``_is_definition``) into ``namespace``, one statement at a
    time; returns a line per statement that raised (``'<filename>, line 12: NameError: ...'``), then skipped.
    ``SyntaxError`` if ``source`` does not parse."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    if not isinstance(namespace, dict):
        raise TypeError(f"namespace must be a dict, got {type(namespace).__name__}")
    failed = []
    for node in ast.parse(source, filename).body:
        if not _is_definition(node):
            continue
        try:
            exec(compile(ast.Module([node], type_ignores=[]), filename, "exec"), namespace)
        except Exception as exc:  # the student's code: any error, reported and skipped
            failed.append(f"{filename}, line {node.lineno}: {type(exc).__name__}: {exc}")
    return failed


def _plain_python(source: str) -> str:
    """A cell's source without IPython's ``%`` and ``!`` lines (blank lines keep the numbering)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


@dataclass
class Sibling:
    """The definitions read from ``notebook`` (``path``: where it was found, None when it was not)."""

    notebook: str
    names: tuple[str, ...]
    path: Path | None = None
    namespace: dict = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)

    def __getitem__(self, name: str):
        """The object the notebook defines as ``name``, or None (not there, or not found at all)."""
        return self.namespace.get(name)

    @property
    def found(self) -> list[str]:
        return [n for n in self.names if self.namespace.get(n) is not None]

    def summary(self) -> str:
        """One line: which of ``names`` came from the student's notebook, and which the course stands in for."""
        if self.path is None:
            return (f"{self.notebook} is not in this folder, so the course's parts stand in for yours: "
                    f"{', '.join(self.names)}")
        missing = [n for n in self.names if n not in self.found]
        line = f"from your {self.notebook}: {', '.join(self.found) or 'none of ' + ', '.join(self.names)}"
        if missing and self.found:
            line += f"; not found there (the course's stand in): {', '.join(missing)}"
        if self.failed:
            line += f"; {len(self.failed)} statement(s) there raised and were skipped (first: {self.failed[0]})"
        return line


def from_sibling(notebook: str, names: list[str], folder: str | Path | None = None) -> Sibling:
    """Read ``notebook`` (a file name such as ``'09_build_gpt.ipynb'``) from ``folder`` (this notebook's folder,
    the working directory, by default) and run its definitions into a fresh namespace; ``names`` are the
    objects wanted from it. A missing or unreadable notebook gives a ``Sibling`` with nothing found."""
    if not isinstance(notebook, str) or not notebook.endswith(".ipynb") or Path(notebook).name != notebook:
        raise ValueError(f"notebook must be a file name ending in .ipynb, got {notebook!r}")
    if isinstance(names, str) or not all(isinstance(n, str) and n.isidentifier() for n in names):
        raise TypeError(f"names must be a list of Python names, got {names!r}")
    path = Path.cwd() / notebook if folder is None else Path(folder) / notebook
    sibling = Sibling(notebook, tuple(names))
    try:
        nb = nbformat.read(str(path), as_version=4)
    except (OSError, ValueError, AttributeError, nbformat.reader.NotJSONError):  # absent, or not a notebook
        return sibling
    sibling.path = path
    sibling.namespace = {"__name__": f"sibling_{Path(notebook).stem}"}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            where = f"{notebook}, cell {index}"
            sibling.failed += run_definitions(_plain_python(cell.source), sibling.namespace, where)
        except SyntaxError as exc:
            sibling.failed.append(f"cell {index}: SyntaxError: {exc.msg}")
    return sibling
