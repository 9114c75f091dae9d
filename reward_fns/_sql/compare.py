"""SQL extraction from a response and result-set comparison.

Extraction (`extract="codeblock"`, BIRD's evaluator rule as NeMo Gym's bird_sql applies it): the last
```` ```sql ```` block with a letter in it, comments removed (`--` to the end of the text, as that rule's
regex does, and `/* */`), whitespace collapsed, a leading `**…**` header dropped. `extract="raw"`: the whole
response, stripped.

Comparison: `set` (BIRD: the rows as sets), `multiset` (rows with their counts, any order), `ordered` (the
same rows in the same order), `auto` (ordered when the reference has an ORDER BY at its top level, else
multiset).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

_FENCE, _CLOSE = "```sql", "```"
_LETTER = re.compile(r"[a-zA-Z]")


def _last_block(response: str) -> str | None:
    """The last ```` ```sql ```` block holding a letter, as BIRD's `(?:```sql)(.*?[a-zA-Z].*?)(?:```)` finds
    it, in one linear pass (the regex is quadratic on a response of unclosed fences, and this runs on the
    gateway's event loop)."""
    found, pos = None, 0
    while (start := response.find(_FENCE, pos)) != -1:
        letter = _LETTER.search(response, start + len(_FENCE))
        if letter is None:
            break
        close = response.find(_CLOSE, letter.end())
        if close == -1:
            break
        found, pos = response[start + len(_FENCE) : close], close + len(_CLOSE)
    return found


def _strip_comments(sql: str) -> str:
    """BIRD's comment removal (`--.*?$` or `/*.*?*/`, DOTALL, no MULTILINE) in one linear pass: `--` removes
    the rest of the text, a closed `/* */` is removed, an unclosed `/*` stays."""
    out: list[str] = []
    i, n, closes = 0, len(sql), True
    while i < n:
        if sql.startswith("--", i):
            break
        if closes and sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            if end != -1:
                i = end + 2
                continue
            closes = False  # no "*/" after here: no later comment closes either
        out.append(sql[i])
        i += 1
    return "".join(out)


def extract_sql(response: str, mode: str) -> str | None:
    if mode == "raw":
        return response.strip() or None
    block = _last_block(response)
    if block is None:
        return None
    sql = re.sub(r"\s+", " ", _strip_comments(block))
    return re.sub(r"^\*\*.*\*\*", "", sql).strip()


def _skip_quoted(sql: str, i: int) -> int:
    """Index after the quoted string, identifier or comment starting at `i` (or `i` when none starts)."""
    ch = sql[i]
    if ch in "'\"`[":
        close = "]" if ch == "[" else ch
        end = sql.find(close, i + 1)
        while end != -1 and close != "]" and sql.startswith(close * 2, end):
            end = sql.find(close, end + 2)
        return len(sql) if end == -1 else end + 1
    if sql.startswith("--", i):
        end = sql.find("\n", i)
        return len(sql) if end == -1 else end + 1
    if sql.startswith("/*", i):
        end = sql.find("*/", i + 2)
        return len(sql) if end == -1 else end + 2
    return i


_ORDER_BY = re.compile(r"order\s+by\b", re.IGNORECASE)


def _word_starts(sql: str, i: int) -> bool:
    return i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_")


def has_top_level_order_by(sql: str) -> bool:
    """True when ORDER BY appears outside every parenthesis, string, identifier quote and comment."""
    depth, i, n = 0, 0, len(sql)
    while i < n:
        after = _skip_quoted(sql, i)
        if after != i:
            i = after
            continue
        ch = sql[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif depth == 0 and ch in "oO" and _word_starts(sql, i) and _ORDER_BY.match(sql, i):
            return True
        i += 1
    return False


def _hashable(row: list[Any]) -> tuple[Any, ...]:
    return tuple(("blob", v["blob"]) if isinstance(v, dict) else v for v in row)


def results_match(reference: list[list[Any]], predicted: list[list[Any]], mode: str) -> bool:
    ref = [_hashable(r) for r in reference]
    pred = [_hashable(r) for r in predicted]
    if mode == "set":
        return set(ref) == set(pred)
    if mode == "multiset":
        return Counter(ref) == Counter(pred)
    return ref == pred
