"""Recovering a response from OpenRLHF's `query` (prompt + response, decoded together) and its prompt.

The response is `query` minus its leading prompt. When the prompt is not a prefix (OpenRLHF left-truncated a
long prompt to its last tokens) the longest tail of the prompt that begins the query is stripped, whatever its
length; failing that, the whole query is the response and the split is reported as failed.
"""

from __future__ import annotations

from typing import Any


def split_query(query: str, prompt: Any) -> tuple[str, bool]:
    """(response, split_ok): `query` minus its leading prompt (see the module docstring for the fallbacks)."""
    if not isinstance(prompt, str) or not prompt:
        return query, False
    if query.startswith(prompt):
        return query[len(prompt) :], True
    # A left-truncated prompt: the query starts with some tail of the prompt, of any length.
    overlap = suffix_prefix_overlap(prompt, query)
    return (query[overlap:], True) if overlap else (query, False)


def suffix_prefix_overlap(text: str, query: str) -> int:
    """Length of the longest suffix of `text` that is a prefix of `query` (KMP: linear in both lengths)."""
    pattern = query[: len(text)]
    if not pattern:
        return 0
    # failure[i]: the longest proper prefix of pattern[: i + 1] that is also its suffix
    failure = [0] * len(pattern)
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = failure[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        failure[i] = k
    matched = 0
    for char in text:
        while matched and (matched == len(pattern) or char != pattern[matched]):
            matched = failure[matched - 1]
        if char == pattern[matched]:
            matched += 1
    return matched
