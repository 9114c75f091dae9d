"""A tiny arithmetic language for `multi` graders, parsed with `ast` and evaluated by walking a whitelist.

Allowed: numbers, the grader names, `+ - * / % **`, unary `-`/`+`, parentheses, and the calls `min`, `max`,
`abs`, `sqrt`, `log`, `exp`, `floor`, `ceil`, `clip(x, low, high)`. Anything else (attributes, subscripts,
lambdas, strings, other names) is refused when the formula is parsed, so no input can reach `eval`.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping

from rewardfleet.services.gateway.errors import FormulaError

MAX_FORMULA_CHARS = 2000
MAX_EXPONENT = 64.0


def _clip(x: float, low: float, high: float) -> float:
    return min(max(x, low), high)


FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "sqrt": math.sqrt,
    "log": math.log,
    "exp": math.exp,
    "floor": math.floor,
    "ceil": math.ceil,
    "clip": _clip,
}
_BINOPS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


class Formula:
    def __init__(self, text: str, names: frozenset[str]) -> None:
        if len(text) > MAX_FORMULA_CHARS:
            raise FormulaError(f"longer than {MAX_FORMULA_CHARS} characters")
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            raise FormulaError(f"not an arithmetic expression: {exc.msg}") from None
        self.text = text
        self.names = names
        self.used: set[str] = set()
        self._check(tree.body)
        self._tree = tree.body

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise FormulaError(f"only numbers are allowed, not {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id not in self.names:
                raise FormulaError(f"unknown name {node.id!r}; the graders are {sorted(self.names)}")
            self.used.add(node.id)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise FormulaError(f"operator {type(node.op).__name__} is not allowed")
            self._check(node.left)
            self._check(node.right)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise FormulaError(f"operator {type(node.op).__name__} is not allowed")
            self._check(node.operand)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise FormulaError(f"only the functions {sorted(FUNCTIONS)} may be called")
            if node.keywords or not node.args:
                raise FormulaError(f"{node.func.id}() takes positional arguments only")
            for arg in node.args:
                self._check(arg)
        else:
            raise FormulaError(f"{type(node).__name__} is not allowed in a formula")

    def evaluate(self, values: Mapping[str, float]) -> float:
        try:
            result = float(self._eval(self._tree, values))
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise FormulaError(f"{self.text!r}: {type(exc).__name__}: {exc}") from None
        if not math.isfinite(result):
            raise FormulaError(f"{self.text!r} gave {result}")
        return result

    def _eval(self, node: ast.AST, values: Mapping[str, float]) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            return float(values[node.id])
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, values), self._eval(node.right, values)
            if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
                raise ValueError(f"exponent {right} is over {MAX_EXPONENT}")
            return _BINOPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand, values)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return float(FUNCTIONS[node.func.id](*(self._eval(a, values) for a in node.args)))
        raise ValueError(f"{type(node).__name__}")  # unreachable: _check refused it
