"""Mutation operators: small, typical slips applied to the solution region of one definition.

Each mutant is a text patch on the definition's source (``Patch``: replace the span of one AST node
by new text), so a committed list replays exactly and stays readable. An expression's replacement
is parenthesised (precedence never changes by accident); a statement's is ``pass``.

Operators (``OPERATORS`` names them): an arithmetic operator swapped, an operand dropped (``a - b``
-> ``a``), a comparison loosened/tightened or negated, ``and``/``or`` swapped or one condition
dropped, ``not``/``-``/``~`` removed, a number off by one (an axis -1 -> -2 or 0), ``True``/``False``
flipped, a reduction or function swapped for its twin (``amax``/``amin``, ``sum``/``mean``,
``sin``/``cos``, ``tril``/``triu``...), a keyword argument dropped (``keepdim=True``, ``stable=True``),
two positional arguments swapped, a slice's ends reversed or one end/step dropped, a branch forced
(``if c`` -> ``if True``/``if False``), a statement deleted (a re-assignment, an update, a call).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator

BINOP_SWAPS = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.MatMult: ast.Mult, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
}
COMPARE_SWAPS = {
    ast.Lt: (ast.LtE, ast.GtE), ast.LtE: (ast.Lt, ast.Gt), ast.Gt: (ast.GtE, ast.LtE), ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
}
TWINS = {
    "amax": "amin", "amin": "amax", "max": "min", "min": "max", "argmax": "argmin", "argmin": "argmax",
    "sum": "mean", "mean": "sum", "sin": "cos", "cos": "sin", "tril": "triu", "triu": "tril",
    "exp": "log", "log": "exp", "softmax": "log_softmax", "cumsum": "cumprod", "topk": "kthvalue",
    "zeros": "ones", "ones": "zeros", "zeros_like": "ones_like", "ones_like": "zeros_like",
    "relu": "gelu", "gelu": "relu", "tanh": "sigmoid", "sigmoid": "tanh", "sqrt": "log",
}
OPERATORS = (
    "swap operator", "drop operand", "swap comparison", "swap and/or", "drop condition", "drop unary",
    "constant +1", "constant -1", "flip bool", "swap twin", "drop keyword", "swap arguments",
    "reverse slice", "drop slice part", "force branch", "delete statement",
)


@dataclass(frozen=True)
class Patch:
    """Replace source lines/columns ``start``..``end`` (1-based lines, UTF-8 byte columns) by ``text``."""

    operator: str
    start: tuple[int, int]
    end: tuple[int, int]
    text: str

    def _bytes(self, source: str) -> tuple[bytes, int, int]:
        data = source.encode()
        offsets = [0]
        for line in data.splitlines(keepends=True):
            offsets.append(offsets[-1] + len(line))
        return data, offsets[self.start[0] - 1] + self.start[1], offsets[self.end[0] - 1] + self.end[1]

    def apply(self, source: str) -> str:
        data, a, b = self._bytes(source)
        return (data[:a] + self.text.encode() + data[b:]).decode()

    def original(self, source: str) -> str:
        """The text this patch replaces."""
        data, a, b = self._bytes(source)
        return data[a:b].decode()


def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)


def _expr(operator: str, node: ast.AST, new: ast.AST) -> Patch:
    return Patch(operator, *_span(node), f"({ast.unparse(new)})")


def _number(node: ast.AST) -> int | float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def _expression_mutants(node: ast.AST, parent: ast.AST | None) -> Iterator[Patch]:
    """Mutants of one expression node (its children are visited separately)."""
    if isinstance(node, ast.BinOp):
        if type(node.op) in BINOP_SWAPS:
            yield _expr("swap operator", node, ast.BinOp(node.left, BINOP_SWAPS[type(node.op)](), node.right))
        yield _expr("drop operand", node, node.left)
        yield _expr("drop operand", node, node.right)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        for op in COMPARE_SWAPS.get(type(node.ops[0]), ()):
            yield _expr("swap comparison", node, ast.Compare(node.left, [op()], node.comparators))
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield _expr("swap and/or", node, ast.BoolOp(other, node.values))
        for i in range(len(node.values)):
            rest = node.values[:i] + node.values[i + 1:]
            yield _expr("drop condition", node, rest[0] if len(rest) == 1 else ast.BoolOp(node.op, rest))
    elif isinstance(node, ast.UnaryOp) and _number(node) is None:
        yield _expr("drop unary", node, node.operand)
    elif isinstance(node, ast.Call):
        for i in range(len(node.keywords)):
            yield _expr("drop keyword", node, ast.Call(node.func, node.args, node.keywords[:i] + node.keywords[i + 1:]))
        if len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
            args = [node.args[1], node.args[0], *node.args[2:]]
            yield _expr("swap arguments", node, ast.Call(node.func, args, node.keywords))
    elif isinstance(node, ast.Attribute) and node.attr in TWINS and isinstance(node.ctx, ast.Load):
        yield _expr("swap twin", node, ast.Attribute(node.value, TWINS[node.attr], ast.Load()))
    elif isinstance(node, ast.Name) and node.id in ("min", "max") and isinstance(parent, ast.Call):
        yield _expr("swap twin", node, ast.Name(TWINS[node.id], ast.Load()))
    elif isinstance(node, ast.Subscript):
        yield from _slice_mutants(node)
    elif isinstance(node, ast.IfExp):
        for value in (True, False):
            yield _expr("force branch", node, ast.IfExp(ast.Constant(value), node.body, node.orelse))
    value = _number(node)
    if value is not None and not (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub)):
        yield _expr("constant +1", node, ast.Constant(value + 1) if value + 1 >= 0 else _neg(value + 1))
        yield _expr("constant -1", node, ast.Constant(value - 1) if value - 1 >= 0 else _neg(value - 1))
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield _expr("flip bool", node, ast.Constant(not node.value))


def _neg(value: int | float) -> ast.AST:
    return ast.UnaryOp(ast.USub(), ast.Constant(-value))


def _slice_mutants(node: ast.Subscript) -> Iterator[Patch]:
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    for i, part in enumerate(parts):
        if not isinstance(part, ast.Slice):
            continue
        variants = []
        if part.lower is not None or part.upper is not None:
            variants.append(("reverse slice", ast.Slice(part.upper, part.lower, part.step)))
        for field in ("lower", "upper", "step"):
            if getattr(part, field) is not None:
                variants.append(("drop slice part", ast.Slice(**{**vars(part), field: None})))
        for operator, new_part in variants:
            new_parts = parts[:i] + [new_part] + parts[i + 1:]
            index = ast.Tuple(new_parts, ast.Load()) if isinstance(node.slice, ast.Tuple) else new_part
            yield _expr(operator, node, ast.Subscript(node.value, index, node.ctx))


def _bound_before(tree: ast.AST) -> dict[str, int]:
    """Each name's first binding line (parameters: line 0), to tell a re-assignment from a first one."""
    first: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            first.setdefault(node.arg, 0)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            first[node.id] = min(first.get(node.id, node.lineno), node.lineno)
    return first


def _statement_mutants(node: ast.stmt, bound: dict[str, int]) -> Iterator[Patch]:
    if isinstance(node, (ast.If, ast.While)) and isinstance(node, ast.If):
        for value in (True, False):
            yield Patch("force branch", *_span(node.test), repr(value))
    deletable = isinstance(node, (ast.AugAssign, ast.Expr, ast.If, ast.Break, ast.Continue))
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        deletable = bound.get(node.targets[0].id, node.lineno) < node.lineno  # a re-assignment
    if deletable and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
        yield Patch("delete statement", *_span(node), "pass")
    if isinstance(node, ast.AugAssign) and type(node.op) in BINOP_SWAPS:
        new = ast.AugAssign(node.target, BINOP_SWAPS[type(node.op)](), node.value)
        yield Patch("swap operator", *_span(node), ast.unparse(new))


def mutants(source: str, in_region) -> list[Patch]:
    """Every distinct mutant of ``source`` whose mutated node lies in a solution region (``in_region(node)``).

    Mutants that do not parse or parse to the original (or to an earlier mutant) are left out."""
    tree = ast.parse(source)
    seen = {ast.dump(tree)}
    bound = _bound_before(tree)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    found = []
    for node in ast.walk(tree):
        if not in_region(node):
            continue
        if isinstance(node, ast.stmt):
            patches = _statement_mutants(node, bound)
        elif isinstance(node, ast.expr):
            patches = _expression_mutants(node, parents.get(node))
        else:
            continue
        for patch in patches:
            try:
                dump = ast.dump(ast.parse(patch.apply(source)))
            except SyntaxError:
                continue
            if dump not in seen:
                seen.add(dump)
                found.append(patch)
    found.sort(key=lambda p: (p.start, p.end, OPERATORS.index(p.operator), p.text))
    return found
