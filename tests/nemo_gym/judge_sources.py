"""Judge prompt texts a NeMo Gym server keeps in its code or a prompt file rather than in its config, read
from the server's own files at the pinned commit at test time (nothing of them is committed here)."""

from __future__ import annotations

import ast
import subprocess
from typing import Any, NamedTuple

import yaml

from tests.nemo_gym import gym_mirror


class Source(NamedTuple):
    """Where a prompt text is: a file under the server's folder, what in it, how it is read, at which commit.

    `how`: constant (a string assigned to `name`), literal (any literal assigned to it), fstring (an
    f-string assigned to `name`, each `{body.x}` / `{x}` turned into the placeholder `{x}`), yaml (the key
    `name` of a prompt YAML, `*` all of it; absent: left out).
    `commit`: None is the pinned one; another is the commit the server's rows were recorded at, when its
    prompt changed after them (said in the catalogue's note)."""

    path: str
    name: str
    how: str
    commit: str | None = None


# The rows of text_to_sql were recorded at 05ca5f3d (its last change of example_rollouts.jsonl); f19769ac
# rewrote the system message after them.
TEXT_TO_SQL_ROWS = "05ca5f3d107a161207b0115b807dec0cbc532eeb"

# The config file of a server whose rows were recorded with settings its default config no longer has: the
# terminus_judge rows (at 987f526e) had the simple prompt, the swap pass and threshold 0.9, which
# terminus_judge_simple.yaml keeps (terminus_judge.yaml moved to the rubrics_v4 prompt).
CONFIG_FILES = {"terminus_judge": "terminus_judge_simple.yaml"}

# Servers whose rows hold the judge's answer but not its request: server -> (the row's key of the judge's
# text, {placeholder of its prompt template: the row's text that fills it (RESPONSE: the policy's text; a.b:
# key b of the row's a)}). The request must hold, for each, the template's line of that placeholder filled
# with that text (with no `judge_prompt_template`: the text itself).
RESPONSE = "<response>"
ANSWER_ONLY: dict[str, tuple[str, dict[str, str]]] = {
    "simpleqa": ("judge_output", {"question": "question", "expected_answer": "expected_answer",
                                  "generation": RESPONSE}),
    "omniscience": ("judge_output", {"question": "question", "expected_answer": "expected_answer",
                                     "generation": "extracted_answer"}),
    "frontierscience_judge": ("judge_output", {"question": "question", "expected_answer": "expected_answer",
                                               "generation": "extracted_answer"}),
    "abstention": ("judge_output", {"question": "question", "target": "answer",
                                    "predicted_answer": "extracted_answer"}),
    "longmemeval": ("judge_raw", {"question": "verifier_metadata.question",
                                  "answer": "verifier_metadata.answer", "response": "generation"}),
    "imo_proofbench_judge": ("judge_output", {"problem": "problem", "rubric": "rubric",
                                              "reference_solution": "reference_solution",
                                              "predicted_answer": "extracted_answer"}),
}  # fmt: skip

# server -> {judge function's keyword: where its text is}
CODE_TEMPLATES: dict[str, dict[str, Source | dict[str, Source]]] = {
    "aalcr": {"judge_prompt_template": Source("app.py", "judge_prompt", "fstring")},
    "math_with_autograder": {
        "judge_prompt_template": Source("prompts/judge.yaml", "user", "yaml"),
        "judge_system_message": Source("prompts/judge.yaml", "system", "yaml"),
    },
    "simpleqa": {"judge_prompt_template": Source("prompts/judge.yaml", "user", "yaml")},
    "omniscience": {"judge_prompt_template": Source("prompts/judge.yaml", "user", "yaml")},
    "arena_judge": {
        "judge_prompts": {
            "hard_prompt": Source("prompts/arena.yaml", "*", "yaml"),
            "creative_writing": Source("prompts/arena_creative.yaml", "*", "yaml"),
        }
    },
    "ugphysics_judge": {
        "judge_prompt_template": Source("prompts/judge.yaml", "user", "yaml"),
        "judge_system_message": Source("prompts/judge.yaml", "system", "yaml"),
    },
    "physics_judge": {
        "judge_prompt_template": Source("prompts/judge.yaml", "user", "yaml"),
        "judge_system_message": Source("prompts/judge.yaml", "system", "yaml"),
    },
    "imo_proofbench_judge": {"judge_prompt_template": Source("prompts/judge.yaml", "user", "yaml")},
    "longmemeval": {
        f"rubric_{name.lower()}": Source("app.py", f"_RUBRIC_{name}", "constant")
        for name in ("CONTAIN", "TEMPORAL", "KNOWLEDGE_UPDATE", "PREFERENCE", "ABSTENTION")
    },
    "abstention": {"judge_prompt_template": Source("app.py", "_DEFAULT_JUDGE_PROMPT_TEMPLATE", "constant")},
    "frontierscience_judge": {"judge_prompt_template": Source("prompts/judge.yaml", "user", "yaml")},
    "terminus_judge": {
        "terminus_1_schema": Source("schemas.py", "TERMINUS_1_SCHEMA", "literal"),
        "terminus_2_schema": Source("schemas.py", "TERMINUS_2_SCHEMA", "literal"),
    },
    "text_to_sql": {
        "judge_prompt_template": Source(
            "prompts.py", "SQL_JUDGE_PROMPT_TEMPLATE", "constant", TEXT_TO_SQL_ROWS
        ),
        "judge_system_message": Source(
            "prompts.py", "SQL_JUDGE_SYSTEM_MESSAGE", "constant", TEXT_TO_SQL_ROWS
        ),
    },
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


def _show(path: str, commit: str | None) -> str | None:
    if commit is None:
        return gym_mirror.show(path)
    if (why := gym_mirror.missing()) is not None:  # the manifest pins only COMMIT: another needs the snapshot
        raise gym_mirror.Unavailable(f"{path} at NeMo Gym {commit[:12]}: {why}")
    done = subprocess.run(
        ["git", "-C", str(gym_mirror.MIRROR), "show", f"{commit}:{path}"], capture_output=True, timeout=60
    )
    return done.stdout.decode() if done.returncode == 0 else None


def read(server: str, source: Source) -> Any:
    path, name, how, commit = source
    text = _show(f"{gym_mirror.SERVERS}/{server}/{path}", commit)
    if text is None:
        raise FileNotFoundError(f"{server}: no {path} at {commit or gym_mirror.COMMIT}")
    if how == "yaml":
        data = yaml.safe_load(text) or {}
        if name == "*":
            return {k: str(v) for k, v in data.items() if v is not None}
        value = data.get(name)
        return None if value is None else str(value)
    value = _assigned(ast.parse(text), name)
    if how == "literal":
        return ast.literal_eval(value)
    if how == "fstring":
        return _template(value)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    raise LookupError(f"{server}/{path}: {name} is not a string")


def code_templates(server: str) -> dict[str, Any]:
    """The judge function's keywords the server's code or prompt files give (see CODE_TEMPLATES)."""
    out = {}
    for key, source in CODE_TEMPLATES.get(server, {}).items():
        value = (
            read(server, source)
            if isinstance(source, Source)
            else {k: read(server, v) for k, v in source.items()}
        )
        if value is not None:
            out[key] = value
    return out


def filled_lines(template: str, values: dict[str, str]) -> list[str]:
    """Each line of `template` holding one of `values`' placeholders, filled (a line with a placeholder not
    in `values` gives just the values it holds)."""
    out = []
    for line in template.splitlines():
        names = [n for n in values if "{" + n + "}" in line]
        if not names:
            continue
        try:
            out.append(line.replace("{{", "{").replace("}}", "}").format_map(values).strip())
        except (KeyError, IndexError, ValueError):
            out += [values[n] for n in names]
    return out
