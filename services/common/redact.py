"""Hide secrets in what the services print: command lines, generated configs, notes, URLs in errors.

Redaction is by shape, not by a list of known fields, so a secret added to a config tomorrow is hidden too:
- a value under a secret-named key or flag (`api_key`, `api_keys`, `--hf-token`, `password`, `Authorization`);
- the password of a URL (`redis://:pw@host`, `https://user:pw@host`);
- a secret-named query parameter of a URL (`?token=…`).

A name is secret when its last word is one of `_SECRET_WORDS`: `api_keys` and `hf_token` are,
`api_keys_file`, `max_tokens`, `tokens_per_minute` and `reward_model_tokenizer` are not.
Only what is printed is redacted; the files the children read keep their values. The fleet redacts its
command lines and configs; the state store its `state_url` (`redis://:pw@host`) in errors and logs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***"

_SECRET_WORDS = frozenset(
    {"key", "keys", "apikey", "apikeys", "token", "secret", "secrets", "password", "passwd", "pwd"}
    | {"credential", "credentials", "authorization", "cookie"}
)
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
# scheme://[user]:password@ — the password is whatever runs up to the last '@' of the authority.
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.\-]*://[^/\s:@]*:)(?P<pw>[^/\s]+)@", re.IGNORECASE)
_QUERY_PARAM = re.compile(r"(?P<head>[?&](?P<name>[^=&#\s]+)=)(?P<value>[^&#\s]*)")


def is_secret_name(name: str) -> bool:
    words = [w for w in _WORD_SPLIT.split(name.lower()) if w]
    return bool(words) and words[-1] in _SECRET_WORDS


def redact_text(text: str) -> str:
    """`text` with URL passwords and secret-named URL query parameters hidden."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{REDACTED}@", text)
    if "://" not in text:
        return text
    return _QUERY_PARAM.sub(
        lambda m: f"{m['head']}{REDACTED}" if is_secret_name(m["name"]) and m["value"] else m[0], text
    )


def redact_value(value: Any) -> Any:
    """A copy of a config value (mappings, lists, scalars) with every secret hidden; the shape stays."""
    if isinstance(value, Mapping):
        return {k: _hide(v) if is_secret_name(str(k)) else redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def _hide(value: Any) -> Any:
    """Every string under a secret-named key; booleans and numbers say nothing secret and stay."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {k: _hide(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_hide(v) for v in value]
    return REDACTED


def redact_argv(argv: Iterable[str]) -> list[str]:
    """argv with every secret-named flag's value (`--api-key X`, `--api-key=X`) and URL password hidden."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next and not arg.startswith("--"):
            out.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        if arg.startswith("-"):
            flag, eq, _ = arg.partition("=")
            if is_secret_name(flag):
                if eq:
                    out.append(f"{flag}={REDACTED}")
                else:
                    out.append(arg)
                    hide_next = True
                continue
        out.append(redact_text(arg))
    return out
