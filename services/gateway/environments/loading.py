"""Finding the environments the gateway serves.

An environment is every `Environment` subclass with a `name`, defined in a module of the built-in package
(`rewardfleet.reward_fns.environments`) or of a folder of `environments.folders`.

A folder's module is loaded as a reward file is (execution/loader.py: by path, under a name covering its
content, able to import its siblings by plain name). An environment of a folder overrides a built-in of the
same name (logged); two of one name among the folders, a bad name or a module that does not import stop
start-up with a `LoadError` naming each file. `environments.settings.<name>` is validated by that
environment's `Settings` and given to its constructor; settings of an environment not loaded, or that an
environment refuses, stop start-up naming the key.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from rewardfleet.services.environments import Environment, NoSettings
from rewardfleet.services.gateway.errors import LoadError
from rewardfleet.services.gateway.execution.loader import file_ref, load_module

logger = logging.getLogger(__name__)
NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def environments_in(module: ModuleType) -> list[type[Environment]]:
    """The named Environment subclasses a module defines (not those it imports)."""
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, Environment)
        and value.__module__ == module.__name__
        and value.name
    ]


def _module_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if p.stem.isidentifier() and not p.stem.startswith("_"))


def load_environments(
    builtin_package: str | None,
    folders: list[Path],
    settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Environment]:
    """name -> one instance of each environment found, made with its `settings` (by name) if given."""
    found: dict[str, tuple[type[Environment], str]] = {}
    problems: list[str] = []

    def add(cls: type[Environment], where: str, builtin: bool) -> None:
        if not NAME_RE.fullmatch(cls.name):
            problems.append(f"{where}: {cls.__name__}.name {cls.name!r}: 1-64 letters, digits, '_', '.', '-'")
            return
        previous = found.get(cls.name)
        if previous is not None and not builtin and previous[1].startswith("folder "):
            problems.append(f"{where}: environment {cls.name!r} is also defined in {previous[1]}")
            return
        if previous is not None:
            logger.warning("environment %r of %s overrides the one of %s", cls.name, where, previous[1])
        found[cls.name] = (cls, where)

    if builtin_package:
        try:
            package = load_module(builtin_package, None)
        except Exception as exc:
            raise LoadError(
                f"environments.builtin_package {builtin_package!r} does not import: {exc}"
            ) from exc
        for path in _module_files(Path(package.__file__ or "").parent):
            try:
                module = load_module(f"{builtin_package}.{path.stem}", None)
            except Exception as exc:
                problems.append(f"{path}: {type(exc).__name__}: {exc}")
                continue
            for cls in environments_in(module):
                add(cls, f"built-in {path}", builtin=True)
    for folder in folders:
        for path in _module_files(folder):
            try:
                ref = file_ref(path, "Environment", root=folder)
                module = load_module(ref.module, ref.file, ref.root)
            except Exception as exc:
                problems.append(f"{path}: {type(exc).__name__}: {exc}")
                continue
            for cls in environments_in(module):
                add(cls, f"folder {path}", builtin=False)
    if problems:
        raise LoadError("environments did not load: " + "; ".join(problems))
    settings = settings or {}
    unknown = sorted(set(settings) - set(found))
    if unknown:
        raise LoadError(
            f"environments.settings: {', '.join(map(repr, unknown))} not loaded "
            f"({', '.join(sorted(found)) or 'none'})"
        )
    out: dict[str, Environment] = {}
    for name, (cls, where) in found.items():
        try:
            if name in settings:
                out[name] = cls(_settings(cls, name, settings[name]))
            else:
                out[name] = cls()
        except LoadError:
            raise
        except Exception as exc:
            raise LoadError(f"{where}: {cls.__name__}() failed: {type(exc).__name__}: {exc}") from exc
    return out


def _settings(cls: type[Environment], name: str, given: Mapping[str, Any]) -> Any:
    if cls.Settings is NoSettings:
        raise LoadError(f"environments.settings.{name}: environment {name!r} takes no settings")
    try:
        return cls.Settings.model_validate(given)
    except ValidationError as exc:
        fields = "; ".join(
            f"environments.settings.{name}.{'.'.join(map(str, error['loc']))}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise LoadError(fields) from None
