"""A reward function's flat keywords, declared once as the fields of its settings dataclasses.

verl and the gateway call `compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)` with
flat keywords (the config's `reward_kwargs` and the names a server injects); a judge's body wants a few
settings objects instead of twenty loose parameters. `Keywords(context, *groups)` joins the two:

- `declare(fn)` gives `fn`, written `compute_score(data_source, ..., extra_info=None, **reward_kwargs)`, the
  signature of its real keywords (every field of every group, keyword-only), so `inspect.signature`,
  `help()` and the gateway's load-time check see them; `**reward_kwargs` alone would accept any name;
- `read(kwargs)` builds one object per group at each call: an unknown name is a `TypeError` (as Python's own
  for an unexpected keyword), a value of the wrong type a `JudgeConfigError` naming the keyword;
- `check(reward_kwargs)` refuses the same at load, as `JudgeConfigError` (a ValueError): what
  `contract.check_reward_kwargs` runs for the gateway.

The context group's values come from the server (addresses, session, tokenizer, the sample's prompt), not
from the user's config, so they are passed through unchecked, as they were as plain parameters.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from rewardfleet.reward_fns.judging.errors import JudgeConfigError

F = TypeVar("F", bound=Callable[..., Any])

# The attribute `declare` sets on a function: how `contract.check_reward_kwargs` finds its keywords.
ATTRIBUTE = "reward_keywords"

_SHOWN_CHARS = 200  # of a refused value's repr in the message


@dataclasses.dataclass(frozen=True)
class Keyword:
    """One flat keyword: the field of `group` it fills, and what the signature and the check know of it."""

    name: str
    group: type
    default: Any
    annotation: str  # as written in the group, for the signature and the messages
    test: Callable[[Any], bool]  # of a value against the evaluated annotation
    checked: bool


class Keywords:
    """The keywords of one reward function: a context group (filled by the server) and settings groups."""

    def __init__(self, context: type, *groups: type) -> None:
        self.groups = (context, *groups)
        self.by_name: dict[str, Keyword] = {}
        self.nested: dict[str, str] = {}  # a field of a settings object a keyword takes -> "keyword.field"
        for group in self.groups:
            hints = typing.get_type_hints(group)
            for f in dataclasses.fields(group):
                for inner in typing.get_args(hints[f.name]):
                    if dataclasses.is_dataclass(inner) and group is not context:
                        for g in dataclasses.fields(inner):
                            self.nested.setdefault(g.name, f"{f.name}.{g.name}")
                if f.name in self.by_name:
                    raise TypeError(f"keyword {f.name!r} is in two groups of {self.groups}")
                if f.default is dataclasses.MISSING:
                    raise TypeError(f"{group.__name__}.{f.name} needs a default: every keyword is optional")
                annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
                self.by_name[f.name] = Keyword(
                    f.name, group, f.default, annotation, checker(hints[f.name]), checked=group is not context
                )

    def declare(self, fn: F) -> F:
        """`fn` with the signature of its keywords (its own parameters, `**kwargs` replaced by the groups'
        fields), marked so `contract.check_reward_kwargs` reads them."""
        own = inspect.signature(fn)
        kept = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        if len(kept) == len(own.parameters):
            raise TypeError(f"{fn.__qualname__} must take **kwargs for its declared keywords")
        keywords = [
            inspect.Parameter(
                k.name, inspect.Parameter.KEYWORD_ONLY, default=k.default, annotation=k.annotation
            )
            for k in self.by_name.values()
        ]
        fn.__signature__ = own.replace(parameters=[*kept, *keywords])  # type: ignore[attr-defined]
        setattr(fn, ATTRIBUTE, self)
        return fn

    def read(self, kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        """One object per group (context first), from a call's keywords."""
        for name in kwargs:
            if name not in self.by_name:
                raise TypeError(f"compute_score() got an unexpected keyword argument {name!r}")
        self._check_values(kwargs, "")
        given: dict[type, dict[str, Any]] = {group: {} for group in self.groups}
        for name, value in kwargs.items():
            given[self.by_name[name].group][name] = value
        return tuple(group(**given[group]) for group in self.groups)

    def check(self, reward_kwargs: Mapping[str, Any]) -> None:
        """Refuse config reward_kwargs this function cannot take, naming the key."""
        unknown = sorted(str(name) for name in reward_kwargs if name not in self.by_name)
        if unknown:
            settings = sorted(k.name for k in self.by_name.values() if k.checked)
            close = difflib.get_close_matches(unknown[0], self.by_name, n=1)
            if unknown[0] in self.nested:  # a setting of a group, given flat (as before the groups)
                close = [self.nested[unknown[0]]]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise JudgeConfigError(
                f"reward_kwargs {unknown} are not parameters of the function{hint}; "
                f"its settings are {settings}"
            )
        self._check_values(reward_kwargs, "reward_kwargs.")

    def _check_values(self, kwargs: Mapping[str, Any], prefix: str) -> None:
        for name, value in kwargs.items():
            keyword = self.by_name[name]
            if keyword.checked and not keyword.test(value):
                shown = repr(value)
                shown = shown if len(shown) <= _SHOWN_CHARS else f"{shown[:_SHOWN_CHARS]}..."
                raise JudgeConfigError(
                    f"{prefix}{name}: {shown} is not a valid value (expected {keyword.annotation})"
                )


def fits(value: Any, hint: Any) -> bool:
    """Whether `value` is of the annotated type (see `checker`)."""
    return checker(hint)(value)


def checker(hint: Any) -> Callable[[Any], bool]:
    """A test of a value against the annotation `hint`, built once per keyword: unions, None, bool apart from
    numbers (an int is a float), mappings, sequences of a type (never a bare string) and classes. Anything
    else is accepted."""
    if hint is Any:
        return lambda value: True
    if hint is None or hint is type(None):
        return lambda value: value is None
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        tests = [checker(h) for h in typing.get_args(hint)]
        return lambda value: any(test(value) for test in tests)
    if hint is bool:
        return lambda value: isinstance(value, bool)
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return lambda value: isinstance(value, int | float) and not isinstance(value, bool)
    if origin is collections.abc.Mapping or origin is dict:
        return lambda value: isinstance(value, Mapping)
    if origin is collections.abc.Sequence or origin in (list, tuple):
        args = typing.get_args(hint)
        item = checker(args[0]) if args and args[0] is not Ellipsis else checker(Any)

        def sequence(value: Any) -> bool:
            if not isinstance(value, collections.abc.Sequence) or isinstance(value, str | bytes):
                return False
            return all(item(v) for v in value)

        return sequence
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return lambda value: True
