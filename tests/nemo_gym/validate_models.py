"""Run as a child interpreter: check verify answers with NeMo Gym's own pydantic models, read from its wheel.

    python validate_models.py WHEEL ANSWERS.json

ANSWERS.json is `[[server, model_class_name, answer, recorded], ...]`, `recorded` being NeMo Gym's own
recorded verify answer for the same row. `nemo_gym.openai_utils` is imported from the wheel as it is; its one
import of NeMo Gym's HTTP plumbing (`nemo_gym.server_utils`, which pulls in its config machinery and an
omegaconf/antlr that do not load here) is a stand-in. The request/response classes are taken from
`nemo_gym/base_resources_server.py` and each server's `app.py` by their source: the class statements,
executed over the real openai_utils models.

The installed `openai` (3.x) is newer than NeMo Gym pins (<= 2.7.2), and its types reject a few fields of
NeMo Gym's own recordings (a null `tool_choice`, usage details). So an answer passes when the model finds no
error in it that it does not also find in the recording: we add none. Prints one line per answer; exits 1
if any failed.
"""

from __future__ import annotations

import ast
import enum
import json
import sys
import types
import typing
import zipfile

import pydantic


def _stand_in_package(wheel: str) -> None:
    sys.path.insert(0, wheel)
    package = types.ModuleType("nemo_gym")
    package.__path__ = [f"{wheel}/nemo_gym"]
    sys.modules["nemo_gym"] = package
    server_utils = types.ModuleType("nemo_gym.server_utils")
    for name in ("_GLOBAL_AIOHTTP_CLIENT_REQUEST_DEBUG", "MAX_NUM_TRIES", "ClientResponse"):
        setattr(server_utils, name, None)
    for name in ("get_response_json", "raise_for_status", "request"):
        setattr(server_utils, name, None)
    sys.modules["nemo_gym.server_utils"] = server_utils


def _classes(source: str, namespace: dict[str, typing.Any]) -> None:
    """Execute the module's class statements (models and enums; not servers) in `namespace`."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and not node.name.endswith(("Server", "Config", "Middleware")):
            try:
                exec(compile(ast.Module([node], []), node.name, "exec"), namespace)
            except NameError:
                continue  # a helper class that needs the server's imports: not a request/response model


def _errors(model: type[pydantic.BaseModel], value: typing.Any) -> set[tuple[str, str]]:
    try:
        model.model_validate(value)
    except pydantic.ValidationError as exc:
        return {(".".join(map(str, e["loc"])), e["type"]) for e in exc.errors()}
    return set()


def main() -> int:
    wheel, answers_path = sys.argv[1], sys.argv[2]
    _stand_in_package(wheel)
    import nemo_gym.openai_utils as openai_utils

    base: dict[str, typing.Any] = {**vars(typing), **vars(openai_utils), "BaseModel": pydantic.BaseModel}
    base.update(ConfigDict=pydantic.ConfigDict, Field=pydantic.Field, Enum=enum.Enum, StrEnum=enum.StrEnum)
    with zipfile.ZipFile(wheel) as zf:
        _classes(zf.read("nemo_gym/base_resources_server.py").decode(), base)
        failed = 0
        with open(answers_path) as f:
            items = json.load(f)
        for server, class_name, answer, recorded in items:
            namespace = dict(base)
            _classes(zf.read(f"resources_servers/{server}/app.py").decode(), namespace)
            model = namespace[class_name]
            model.model_rebuild(_types_namespace=namespace)
            ours, theirs = _errors(model, answer), _errors(model, recorded)
            new = ours - theirs
            if new:
                failed += 1
                print(f"FAIL {server} {class_name}: {sorted(new)}")
            else:
                print(f"ok {server} {class_name} ({len(theirs)} errors shared with the recording)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
