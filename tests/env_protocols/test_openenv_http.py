"""OpenEnv's HTTP routes at `/openenv/<env>`, in `openenv` 0.10's shapes (its `ResetResponse`, `StepResponse`,
`SchemaResponse`, `HealthResponse`, `EnvironmentMetadata` models parse them), stateless as OpenEnv's are: each
reset or step opens a session and closes it."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip(
    "openenv.core.env_server.types", reason="openenv 0.10 (.ci/setup installs it with --no-deps)"
)

from openenv.core.env_server.types import (
    EnvironmentMetadata,
    HealthResponse,
    ResetResponse,
    SchemaResponse,
    State,
    StepResponse,
)

from tests.support.env_protocols import ENV, FLAKY, Served, auth

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def http(served: Served) -> httpx.Client:
    with httpx.Client(base_url=f"{served.url}/openenv/{ENV}", headers=auth(), timeout=30) as client:
        yield client
    assert served.open_sessions("a") == 0  # stateless: nothing outlives a request


def test_reset_and_step_answer_in_openenv_shapes(http: httpx.Client, served: Served) -> None:
    reset = ResetResponse.model_validate(http.post("/reset", json={"initial_count": 4, "seed": 1}).json())
    assert reset.done is False and {t["name"] for t in reset.observation["tools"]} >= {"increment_counter"}
    assert http.post("/reset").status_code == 200  # no body: the default task
    step = StepResponse.model_validate(
        http.post(
            "/step",
            json={
                "action": {"type": "call_tool", "tool_name": "increment_counter", "arguments": {"count": 2}}
            },
        ).json()
    )
    assert step.observation["result"]["data"] == {"success": True} and step.done is False
    fresh = http.post(
        "/step", json={"action": {"type": "call_tool", "tool_name": "get_counter_value"}}
    ).json()
    assert fresh["observation"]["result"]["data"] == {"count": 0}  # a fresh session each request, as OpenEnv
    verdict = StepResponse.model_validate(
        http.post("/step", json={"action": {"type": "verify", "body": {"expected_count": 0}}}).json()
    )
    assert (verdict.reward, verdict.done) == (1.0, True)
    flaky = f"{served.url}/openenv/{FLAKY}/step"
    failed = http.post(flaky, json={"action": {"type": "call_tool", "tool_name": "fail"}}).json()
    assert failed["observation"]["error"] == {
        "error_type": "execution_error",
        "message": "the tool failed on purpose",
    }


def test_info_routes(http: httpx.Client) -> None:
    assert HealthResponse.model_validate(http.get("/health").json()).status.value == "healthy"
    assert State.model_validate(http.get("/state").json()).step_count == 0
    meta = EnvironmentMetadata.model_validate(http.get("/metadata").json())
    assert meta.name == ENV and "increment_counter" in meta.description
    schema = SchemaResponse.model_validate(http.get("/schema").json())
    calls = {
        branch["properties"]["tool_name"]["const"]: branch
        for branch in schema.action["oneOf"]
        if "tool_name" in branch.get("properties", {}) and "const" in branch["properties"]["tool_name"]
    }
    assert calls["increment_counter"]["properties"]["arguments"]["required"] == ["count"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {"action": {"type": "call_tool", "tool_name": "increment_counter", "arguments": {"count": "x"}}},
            "count",
        ),
        (
            {
                "action": {
                    "type": "call_tool",
                    "tool_name": "increment_counter",
                    "arguments": {"count": 1, "z": 0},
                }
            },
            "z",
        ),
        ({"action": {"type": "fly"}}, "action"),
        ({"action": {"type": "call_tool", "tool_name": ""}}, "tool_name"),
        ({"action": "increment"}, "action"),
        ({}, "action"),
    ],
)
def test_bad_steps_are_4xx_naming_the_field(http: httpx.Client, body: dict, field: str) -> None:
    answer = http.post("/step", json=body)
    assert answer.status_code == 422, answer.text
    assert field in answer.text


def test_hostile_bodies_are_4xx(http: httpx.Client) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    assert http.post("/step", content=deep).status_code == 422
    assert http.post("/reset", content=b"\xff\xfe").status_code == 422
    bad_task = http.post("/reset", json={"initial_count": "many"})
    assert bad_task.status_code == 422 and "initial_count" in bad_task.text
    assert http.post("/reset", json={"seed": -1}).status_code == 422
    unknown = http.post("/step", json={"action": {"type": "call_tool", "tool_name": "jump"}})
    assert unknown.status_code == 404 and "jump" in unknown.text
    assert http.get("/../no_such_env/health").status_code == 404


def test_unknown_environment_and_missing_key(served: Served) -> None:
    missing = httpx.get(f"{served.url}/openenv/nope/health", headers=auth(), timeout=30)
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "UnknownEnvironment"
    assert httpx.post(f"{served.url}/openenv/{ENV}/reset", timeout=30).status_code == 401
