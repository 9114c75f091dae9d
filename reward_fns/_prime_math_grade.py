"""prime_math's first grader (PRM800K's `grade_answer`), as verl 0.9.1 runs it for the `numina_*` sources.

An answer is right when (a) it equals the ground truth after the MATH normalisation
(`rewardfleet.reward_fns.math`'s, the same as verl's), or (b) after PRM800K's own normalisation (units and
words removed, LaTeX turned into text by pylatexenc, lower case), element by element for tuples/intervals:
unreduced fractions must match exactly, an integer ground truth needs an integer answer, and anything else
must have a sympy-simplified difference of 0 (only for expressions with at most two distinct letters and no
huge powers; at most `SYMPY_TIMEOUT_S`, as verl bounds it).
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
from collections.abc import Iterator

import sympy
from pylatexenc import latex2text
from sympy.parsing import sympy_parser

from rewardfleet.reward_fns.math import _Malformed
from rewardfleet.reward_fns.math import normalize as normalize_math

SYMPY_TIMEOUT_S = 10.0
_BAD_SUBSTRINGS = ("^{", "^(")
_BAD_REGEXES = (re.compile(r"\^[0-9]+\^"), re.compile(r"\^[0-9][0-9]+"))
_TUPLE_CHARS = "()[]"
_UNITS = (
    *("degree", "cm", "centimeter", "meter", "mile", "second", "minute", "hour", "day", "week", "month"),
    *("year", "foot", "feet", "inch", "yard", "liter"),
)
_UNIT_PATTERNS = tuple(re.compile(f"{unit}(es)?(s)? *(\\^[0-9]+)?") for unit in _UNITS)
_TEXT_WRAPPED = re.compile(r"^\\text\{(?P<text>.+?)\}$")
_FRACTION = re.compile(r"^-?[0-9]+.?/0*[1-9][0-9]*.?$")
_THOUSANDS_COMMA = re.compile(r"(\d)(,)(\d\d\d)($|\D)")
_MIXED_NUMBER = re.compile(r"([0-9]) +([0-9])")
_LATEX_SYMBOLS = (("√", "sqrt"), ("π", "pi"), ("∞", "inf"), ("∪", "U"), ("·", "*"), ("×", "*"))


def normalize_mathd(answer: str) -> str:
    """The MATH dataset normalisation with an enclosing `\\text{}` removed; unchanged where it breaks."""
    answer = answer.strip()
    match = _TEXT_WRAPPED.search(answer)
    if match is not None:
        answer = match.group("text").strip()
    try:
        return normalize_math(answer)
    except _Malformed:
        return answer


def _parse_latex(expr: str) -> str:
    expr = expr.replace("\\tfrac", "\\frac").replace("\\dfrac", "\\frac").replace("\\frac", " \\frac")
    expr = latex2text.LatexNodes2Text().latex_to_text(expr)
    for symbol, name in _LATEX_SYMBOLS:
        expr = expr.replace(symbol, name)
    return expr.strip()


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_int(value: float) -> bool:
    try:
        return abs(value - round(value)) <= 1e-7
    except (OverflowError, ValueError):
        return False


def _strip_thousands_commas(expr: str) -> str:
    while True:
        changed = _THOUSANDS_COMMA.sub(r"\1\3\4", expr)
        if changed == expr:
            return changed
        expr = changed


def _str_is_int(text: str) -> bool:
    try:
        return _is_int(float(_strip_thousands_commas(text)))
    except ValueError:
        return False


def normalize_prm800k(expr: str) -> str:
    match = _TEXT_WRAPPED.search(expr)
    if match is not None:
        expr = match.group("text")
    for old, new in (("\\%", "%"), ("\\$", "$"), ("$", ""), ("%", ""), (" or ", " , "), (" and ", " , ")):
        expr = expr.replace(old, new)
    for old, new in (("million", "*10^6"), ("billion", "*10^9"), ("trillion", "*10^12")):
        expr = expr.replace(old, new)
    for pattern in _UNIT_PATTERNS:
        expr = pattern.sub("", expr)
    expr = re.sub(r"\^ *\\circ", "", expr)
    if expr and expr[0] == "{" and expr[-1] == "}":
        expr = expr[1:-1]
    expr = re.sub(",\\\\! *", "", expr)
    if _is_float(expr) and _is_int(float(expr)):
        expr = str(round(float(expr)))
    if "\\" in expr:
        with contextlib.suppress(Exception):  # pylatexenc rejects malformed LaTeX in many ways
            expr = _parse_latex(expr)
    expr = re.sub("- *", "-", expr)
    expr = _MIXED_NUMBER.sub(r"\1+\2", expr).lower()
    if _str_is_int(expr):
        expr = str(int(float(expr.replace(",", ""))))
    return expr


def _may_evaluate(expr: str) -> bool:
    letters = {c for c in expr.replace("sqrt", "").replace("frac", "") if c.isalpha()}
    if len(letters) > 2 or any(bad in expr for bad in _BAD_SUBSTRINGS):
        return False
    return all(pattern.search(expr) is None for pattern in _BAD_REGEXES)


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """SIGALRM-based limit in the main thread (the gateway's worker processes call us there); elsewhere the
    gateway's per-call timeout is the bound."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"sympy did not finish within {seconds}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def equal_under_sympy(truth: str, given: str) -> bool:
    expr = f"({truth})-({given})"
    if not _may_evaluate(expr):
        return False
    transformations = (
        *sympy_parser.standard_transformations,
        sympy_parser.implicit_multiplication_application,
    )
    try:
        with _time_limit(SYMPY_TIMEOUT_S):
            difference = sympy_parser.parse_expr(expr.replace("^", "**"), transformations=transformations)
            return bool(sympy.simplify(difference) == 0)
    except Exception:  # sympy raises anything from SyntaxError to TypeError on odd input; timeouts too
        return False


def split_tuple(expr: str) -> list[str]:
    expr = _strip_thousands_commas(expr)
    if not expr:
        return []
    inner = expr[1:-1]
    if (
        len(expr) > 2
        and expr[0] in _TUPLE_CHARS
        and expr[-1] in _TUPLE_CHARS
        and not any(c in inner for c in _TUPLE_CHARS)
    ):
        return [element.strip() for element in inner.split(",")]
    return [expr]


def grade_answer(given: str, truth: str) -> bool:
    if normalize_mathd(truth) == normalize_mathd(given):
        return True
    truth_n, given_n = normalize_prm800k(truth), normalize_prm800k(given)
    if truth_n == given_n:
        return True
    if not given_n:
        return False
    truth_elems, given_elems = split_tuple(truth_n), split_tuple(given_n)
    if len(truth_elems) > 1 and (truth_n[0] != given_n[0] or truth_n[-1] != given_n[-1]):
        return False
    if len(truth_elems) != len(given_elems):
        return False
    for truth_e, given_e in zip(truth_elems, given_elems, strict=True):
        if bool(_FRACTION.search(truth_e)) and bool(_FRACTION.search(given_e)):
            correct = truth_e == given_e  # unreduced fractions must match as written
        elif _str_is_int(truth_e) != _str_is_int(given_e):
            correct = False
        else:
            correct = equal_under_sympy(truth_e, given_e)
        if not correct:
            return False
    return True
