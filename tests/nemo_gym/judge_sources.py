"""Judge prompt texts a NeMo Gym server keeps in its code or a prompt file rather than in its config, read
from the server's own files at the pinned commit at test time (nothing of them is committed here)."""

from __future__ import annotations

import ast
from typing import Any

import yaml

from tests.nemo_gym import gym_mirror

# server -> {judge function's keyword: (file under the server's folder, what in it, how it is read)}
#   constant: a string assigned to the name; fstring: an f-string assigned to the name, each `{body.x}` /
#   `{x}` turned into the placeholder `{x}`; yaml: the key of a prompt YAML (absent: the keyword is left out)
CODE_TEMPLATES: dict[str, dict[str, tuple[str, str, str]]] = {
    "aalcr": {"judge_prompt_template": ("app.py", "judge_prompt", "fstring")},
}


def _assigned(tree: ast.AST, name: str) -> ast.expr:
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    raise LookupError(f"no assignment to {name}")


def _template(value: ast.expr) -> str:
    """An f-string as a `str.format` template: literal braces doubled, each field `{name}`."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value.replace("{", "{{").replace("}", "}}")
    if not isinstance(value, ast.JoinedStr):
        raise LookupError("not an f-string")
    parts = []
    for part in value.values:
        if isinstance(part, ast.FormattedValue):
            field = part.value
            if isinstance(field, ast.Attribute):
                parts.append("{" + field.attr + "}")
            elif isinstance(field, ast.Name):
                parts.append("{" + field.id + "}")
            else:
                raise LookupError(f"field {ast.dump(field)[:60]} is not a name")
        else:
            parts.append(_template(part))
    return "".join(parts)


def read(server: str, path: str, name: str, how: str) -> str | None:
    text = gym_mirror.show(f"{gym_mirror.SERVERS}/{server}/{path}")
    if text is None:
        raise FileNotFoundError(f"{server}: no {path} at {gym_mirror.COMMIT}")
    if how == "yaml":
        value = (yaml.safe_load(text) or {}).get(name)
        return None if value is None else str(value)
    value = _assigned(ast.parse(text), name)
    if how == "fstring":
        return _template(value)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    raise LookupError(f"{server}/{path}: {name} is not a string")


def code_templates(server: str) -> dict[str, Any]:
    """The judge function's keywords the server's code or prompt files give (see CODE_TEMPLATES)."""
    out = {}
    for key, (path, name, how) in CODE_TEMPLATES.get(server, {}).items():
        value = read(server, path, name, how)
        if value is not None:
            out[key] = value
    return out
