"""A request's inline grader spec may not name code. `/graders/validate` and `/graders/run` used to resolve
an inline `{"type": "python", "path": ...}` with the user-code loader: any importable module was imported (its
top level ran), any `.py` file on the host ran inside the gateway with its environment (provider keys), and
the answer told whether the file existed. Now any field that names code, a module or a file, at any depth of
a `multi` grader, is a 403 naming the field, the same whether the target exists or not; nothing is imported
or read. The operator's configured python graders keep working by name."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.gateway import Gateway, start_gateway

ATTACK_FILES = Path(__file__).parent / "attack_files"
SAMPLE = {"data_source": "d", "solution_str": "the answer is 42", "ground_truth": "42"}
ROUTES = ("/graders/validate", "/graders/run")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A canary grader file somewhere on the host (not configured anywhere)."""
    folder = tmp_path_factory.mktemp("planted")
    shutil.copy(ATTACK_FILES / "canary_grader.py", folder / "canary_grader.py")
    return folder / "canary_grader.py"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("graders")
    configured = tmp / "configured" / "canary_grader.py"
    configured.parent.mkdir()
    shutil.copy(ATTACK_FILES / "canary_grader.py", configured)
    config = {
        "workers": 1,
        "graders": {
            "operator_py": {"type": "python", "path": f"{configured}:grade"},
            "eq": {"type": "string_check", "operation": "like"},
        },
    }
    gateway = start_gateway(tmp, config, None)
    yield gateway
    gateway.proc.stop()


def _post(gw: Gateway, route: str, grader: Any) -> httpx.Response:
    return httpx.post(f"{gw.url}{route}", json={"grader": grader, "sample": SAMPLE}, timeout=30)


def _python(path: str) -> dict[str, Any]:
    return {"type": "python", "path": path}


def _multi(inner: Any, depth: int = 1) -> Any:
    for _ in range(depth):
        inner = {"type": "multi", "graders": {"a": inner, "b": "eq"}, "calculate_output": "a + b"}
    return inner


@pytest.mark.parametrize("route", ROUTES)
def test_an_inline_python_file_is_refused_unread_and_unrun(gw: Gateway, planted: Path, route: str) -> None:
    resp = _post(gw, route, _python(f"{planted}:grade"))
    assert resp.status_code == 403, resp.text
    error = resp.json()["error"]
    assert error["type"] == "InlineCodeRefused" and error["field"] == "grader.path", error
    assert "grader.path" in error["message"]
    assert not Path(f"{planted}.imported").exists()  # its top level never ran


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("present", "absent"),
    [
        ("{planted}:grade", "{planted}.missing.py:grade"),  # a file that exists / does not
        ("json:loads", "no_such_module_anywhere:loads"),  # a module that imports / does not
        ("os:system", "os:no_such_function"),
    ],
)
def test_the_refusal_does_not_tell_what_exists(
    gw: Gateway, planted: Path, route: str, present: str, absent: str
) -> None:
    answers = [_post(gw, route, _python(path.format(planted=planted))) for path in (present, absent)]
    assert [a.status_code for a in answers] == [403, 403]
    assert answers[0].json() == answers[1].json()  # the answer never echoes the path, nor looks at it


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("grader", "field"),
    [
        (_multi(_python("json:loads")), "grader.graders.a.path"),
        (_multi(_python("json:loads"), depth=3), "grader.graders.a.graders.a.graders.a.path"),
        ({"type": "python"}, "grader.type"),  # a code kind with the path left out
        ({"type": "string_check", "operation": "eq", "path": "json:loads"}, "grader.path"),
        (_multi({"type": "string_check", "operation": "eq", "module": "os"}), "grader.graders.a.module"),
    ],
)
def test_every_field_naming_code_is_refused_at_any_depth(
    gw: Gateway, planted: Path, route: str, grader: Any, field: str
) -> None:
    resp = _post(gw, route, grader)
    assert resp.status_code == 403, resp.text
    assert resp.json()["error"]["field"] == field, resp.json()


def test_operator_configured_python_graders_still_work(gw: Gateway) -> None:
    valid = _post(gw, "/graders/validate", "operator_py").json()
    assert valid == {"valid": True, "errors": []}
    run = _post(gw, "/graders/run", "operator_py").json()
    assert run["status"] == "ok" and run["score"] == 1.0, run
    inline_multi = _post(gw, "/graders/run", {"type": "multi", "graders": {"p": "operator_py", "e": "eq"},
                                              "calculate_output": "p + e"}).json()  # fmt: skip
    assert inline_multi["status"] == "ok" and inline_multi["score"] == 2.0, inline_multi
    like = {"type": "string_check", "operation": "like"}
    named_like_fields = {"type": "multi", "calculate_output": "code + path",
                         "graders": {"code": "eq", "path": like}}  # fmt: skip
    assert _post(gw, "/graders/run", named_like_fields).json()["score"] == 2.0  # names, not fields
    declarative = _post(gw, "/graders/run", {"type": "string_check", "operation": "like"}).json()
    assert declarative["status"] == "ok" and declarative["score"] == 1.0, declarative
