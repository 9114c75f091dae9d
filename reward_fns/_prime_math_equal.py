"""prime_math's second grader (`math_equal`, from ToRA), as verl 0.9.1 runs it after `grade_answer` fails.

In order: `$5` / `5%` / `5\\%` lose their sign; `x_base` is read as a number; `\\pi` becomes `pi` times the
value (verl then `eval`s the string: we evaluate only arithmetic on literals, never names or calls);
case-insensitive or space-insensitive string equality; numbers equal within 1e-4 relative (also the
reference ×100 and ÷100); brackets ignored; element-wise for intervals, comma lists, `Point(...)` and
`pmatrix` references. verl 0.9.1's final symbolic step can never succeed (its timeout helper is entered as
a context manager, which raises, and the error is swallowed), so it is not run here: the result is the same.
An exception anywhere makes the whole comparison false, as in verl.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from sympy.parsing.sympy_parser import parse_expr

_DOLLAR_NUMBER = re.compile(r"\$\d+(\.\d+)?")
_PERCENT_NUMBER = (re.compile(r"^\d+(\.\d+)?%$"), re.compile(r"^\d+(\.\d+)?\\%$"))
_INTERVALS = (
    (re.compile(r"^Interval\((.*)\)$"), "[{}]"),
    (re.compile(r"^Interval\.Ropen\((.*)\)$"), "[{})"),
    (re.compile(r"^Interval\.Lopen\((.*)\)$"), "({}]"),
    (re.compile(r"^Interval\.open\((.*)\)$"), "({})"),
)
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}  # fmt: skip
_MAX_EXPONENT = 10_000
_MATRIX_NAMES = frozenset({"Matrix", "sqrt", "pi", "E", "I", "oo"})


def literal_eval_arithmetic(text: str) -> Any:
    """What `eval(text)` gives for arithmetic on number literals (with tuples, lists, sets, comparisons);
    raises for anything else (names, calls, attributes), and for absurd powers instead of hanging."""

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float | complex):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = value(node.operand)
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
                raise ValueError("exponent too large to evaluate")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.Tuple):
            return tuple(value(e) for e in node.elts)
        if isinstance(node, ast.List):
            return [value(e) for e in node.elts]
        if isinstance(node, ast.Set):
            return {value(e) for e in node.elts}
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            left = value(node.left)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = value(right_node)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        raise ValueError(f"not arithmetic: {ast.dump(node)[:60]}")

    return value(ast.parse(text.strip(), mode="eval").body)


def _handle_pi(text: str, pi: float) -> Any:
    index = text.find("\\pi")
    while index != -1:
        factor = "*" if index > 0 and text[index - 1].isdigit() else "1*"
        text = text[:index] + f"{factor}{pi}" + text[index + 3 :]
        index = text.find("\\pi", index + 1)
    try:
        return literal_eval_arithmetic(text)
    except Exception:  # verl: `with suppress(Exception): string = eval(string)`
        return text


def normalize(answer: Any, pi: float) -> Any:
    if isinstance(answer, str) and _DOLLAR_NUMBER.match(answer):
        return answer[1:]
    if isinstance(answer, str) and any(p.match(answer) for p in _PERCENT_NUMBER):
        return answer.replace("\\%", "").replace("%", "")
    if isinstance(answer, str) and "_" in answer:
        return int(float(answer.split("_")[0]))  # a number in some base; raises when it is not a number
    if isinstance(answer, str) and "\\pi" in answer:
        return _handle_pi(answer, pi)
    return answer


def as_number(value: Any) -> float | None:
    text = str(value)
    try:
        return float(text.replace("{,}", "")) if "{,}" in text else float(text.replace(",", ""))
    except ValueError:
        return None


def _format_intervals(prediction: str) -> str:
    for pattern, shape in _INTERVALS:
        match = pattern.match(prediction)
        if match:
            return shape.format(match.group(1))
    return prediction


def _all_equal(pairs: list[tuple[Any, Any]], include_percentage: bool, tolerance: float) -> bool:
    # Every pair is compared (verl builds the whole list before `all`), so an exception in any one propagates.
    return all([math_equal(p, r, include_percentage, tolerance) for p, r in pairs])


def _safe_matrix(prediction: str) -> Any:
    names = set(re.findall(r"[A-Za-z_]\w*", prediction))
    if not names <= _MATRIX_NAMES:
        raise ValueError(f"not a plain matrix: {sorted(names - _MATRIX_NAMES)}")
    return parse_expr(prediction)


def math_equal(
    prediction: Any,
    reference: Any,
    include_percentage: bool = True,
    tolerance: float = 1e-4,
    pi: float = math.pi,
) -> bool:
    prediction = normalize(prediction, pi)
    reference = normalize(reference, pi)
    if isinstance(prediction, str) and len(prediction) > 1000:
        prediction = prediction[:1000]
    if isinstance(prediction, str) and isinstance(reference, str):
        if prediction.strip().lower() == reference.strip().lower():
            return True
        if prediction.replace(" ", "") == reference.replace(" ", ""):
            return True
    predicted_number, reference_number = as_number(prediction), as_number(reference)
    if predicted_number is not None and reference_number is not None:
        candidates = [reference_number / 100, reference_number, reference_number * 100]
        return any(
            math.isclose(c, predicted_number, rel_tol=tolerance)
            for c in (candidates if include_percentage else [reference_number])
        )
    if not prediction and prediction not in [0, False]:
        return False
    reference, prediction = str(reference).strip(), _format_intervals(str(prediction).strip())
    pred_str, ref_str = prediction, reference
    if (prediction.startswith("[") and prediction.endswith("]") and not reference.startswith("(")) or (
        prediction.startswith("(") and prediction.endswith(")") and not reference.startswith("[")
    ):
        pred_str, ref_str = pred_str.strip("[]()"), ref_str.strip("[]()")
    for bracket in "{}()":
        ref_str, pred_str = ref_str.replace(bracket, ""), pred_str.replace(bracket, "")
    if pred_str == ref_str:
        return True
    if (
        prediction
        and reference
        and prediction[0] in "(["
        and prediction[-1] in ")]"
        and prediction[0] == reference[0]
        and prediction[-1] == reference[-1]
    ):
        pred_parts, ref_parts = prediction[1:-1].split(","), reference[1:-1].split(",")
        if len(pred_parts) == len(ref_parts) and _all_equal(
            list(zip(pred_parts, ref_parts, strict=True)), include_percentage, tolerance
        ):
            return True
    if "," in prediction and "," in reference:
        pred_parts = [item.strip() for item in prediction.split(",")]
        ref_parts = [item.strip() for item in reference.split(",")]
        if len(pred_parts) == len(ref_parts):
            return _all_equal(list(zip(pred_parts, ref_parts, strict=True)), include_percentage, tolerance)
    if (
        prediction.startswith("Point") and reference[0] == "(" and reference[-1] == ")"
    ):  # IndexError as verl's
        pred_parts = prediction[prediction.find("(") + 1 : -1].split(",")
        ref_parts = reference[1:-1].split(",")
        if len(pred_parts) == len(ref_parts) and _all_equal(
            list(zip(pred_parts, ref_parts, strict=False)), include_percentage, tolerance
        ):
            return True
    if r"\begin{pmatrix}" in reference and prediction.startswith("Matrix"):
        try:
            matrix = _safe_matrix(prediction)
            items = reference.split()[1:-1:2]
            if len(matrix) == len(items) and _all_equal(
                list(zip(matrix, items, strict=False)), include_percentage, tolerance
            ):
                return True
        except Exception:
            pass
    elif (
        r"\begin{pmatrix}" in reference
        and prediction.startswith("[")
        and prediction.endswith("]")
        and isinstance(literal_eval_arithmetic(prediction), list)  # raises out of math_equal, as verl's eval
    ):
        try:
            rows_matrix = literal_eval_arithmetic(prediction)
            body = (
                reference.removeprefix(r"\\begin{pmatrix}").removeprefix(r"\begin{pmatrix}")
                .removesuffix(r"\\end{pmatrix}").removesuffix(r"\end{pmatrix}")
            )  # fmt: skip
            rows = [row.split("&") if "&" in row else row for row in body.split("\\")]
            if len(rows_matrix) == len(rows) and _all_equal(
                list(zip(rows_matrix, rows, strict=False)), include_percentage, tolerance
            ):
                return True
        except Exception:
            pass
    return False
