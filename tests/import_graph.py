"""The import graph of a package, read from its source (nothing is imported), and the rules on it.

``import_graph(package)`` maps each module's dotted name to the package modules it imports, every
import counted: at the top, inside a function, under ``if TYPE_CHECKING``. ``circles(graph)``
lists each import circle once. ``graph_problems(package)`` states, in words, every break of the
rules CONTRIBUTING.md gives for ``course_utils/``:

- at most ``MAX_ROOT_MODULES`` modules at the root (the building blocks; a concept family is a package);
- no module imports another's private name (``from course_utils.x import _name``) across a package
  boundary (a package is a folder; the root is one);
- the root's building blocks import no package of their own library;
- no import circle, between modules or between the root's packages.
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_ROOT_MODULES = 15


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """Each import of ``path`` as (module, names imported from it), relative imports resolved."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = name if is_package else name.rpartition(".")[0]
            if node.level:
                base = ".".join(base.split(".")[: len(base.split(".")) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((module, [alias.name for alias in node.names]))
    return found


def import_graph(package: Path) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """(module -> modules of ``package`` it imports, [(importer, module, private name)] of every ``_name`` import)."""
    modules = {_module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    graph, private = {}, []
    for name, path in modules.items():
        targets = set()
        for module, names in _imports(path, name, path.name == "__init__.py"):
            for candidate in (module, *(f"{module}.{n}" for n in names)):
                if candidate in modules and candidate != name:
                    targets.add(candidate)
            if module in modules:
                private += [(name, module, n) for n in names if n.startswith("_") and not n.startswith("__")]
        graph[name] = targets
    return graph, private


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one node (Tarjan), each sorted, as a list."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _home(module: str, root: str) -> str:
    """The folder a module sits in, as a dotted name (a package's ``__init__`` sits in its own folder)."""
    return module.rpartition(".")[0] or root


def _top(module: str, packages: set[str]) -> str:
    """The root's package that holds ``module`` (``course_utils.gpt``), or the root for a root module."""
    parts = module.split(".")
    return ".".join(parts[:2]) if ".".join(parts[:2]) in packages else parts[0]


def graph_problems(package: Path) -> list[str]:
    """Every break of the layout's import rules in ``package``, in words (empty when it keeps them)."""
    root = package.name
    graph, private = import_graph(package)
    packages = {_module_name(p, package) for p in package.glob("*/__init__.py")}
    problems = []
    root_modules = sorted(p.name for p in package.glob("*.py"))
    if len(root_modules) > MAX_ROOT_MODULES:
        problems.append(f"{root}/ holds {len(root_modules)} modules (limit {MAX_ROOT_MODULES}): "
                        "move a concept family into a package of its own")
    homes = {name: (name if name in packages or name == root else _home(name, root)) for name in graph}
    for importer, module, name in private:
        if homes[importer] != homes[module]:
            problems.append(f"{importer} imports the private name {name} from {module}, across a package boundary")
    for name, targets in graph.items():
        if homes[name] == root and name != root:
            reached = sorted({_top(t, packages) for t in targets} - {root})
            problems += [f"{name} is a building block at the root but imports the package {p}" for p in reached]
    problems += [f"import circle: {' -> '.join(group)}" for group in circles(graph)]
    tops = {}  # the root's packages, each as one node (the root itself is kept out of them by the rule above)
    for name, targets in graph.items():
        if _top(name, packages) == root:
            continue
        home = _top(name, packages)
        tops.setdefault(home, set()).update({_top(t, packages) for t in targets} - {home, root})
    problems += [f"packages import each other in a circle: {' <-> '.join(group)}" for group in circles(tops)]
    return problems
