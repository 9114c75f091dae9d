"""The TRL `environment_factory` class of docs/environments.md, as TRL 1.16's `GRPOTrainer` drives it: its
tool methods' schemas come from transformers' `get_json_schema` (what `apply_chat_template(tools=...)` reads),
`reset(**row)` starts an episode over OpenEnv's `GenericEnvClient`, the model's tool calls are the methods,
and `get_reward()` verifies the session."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

pytest.importorskip(
    "openenv.core.generic_client", reason="openenv 0.10 (.ci/setup installs it with --no-deps)"
)

from openenv.core.generic_client import GenericEnvClient
from transformers.utils import get_json_schema

from tests.support.env_protocols import ENV, Served, auth

pytestmark = pytest.mark.timeout(120)


class CounterEnvironment:
    """One rollout's episode of the fleet's counter environment (an `environment_factory` class for TRL)."""

    url = ""  # the gateway's base URL; set before training
    headers: ClassVar[dict[str, str]] = {}  # {"Authorization": "Bearer <tenant key>"}

    def __init__(self) -> None:
        self.env = GenericEnvClient(base_url=f"{self.url}/openenv/{ENV}", headers=self.headers).sync()

    def reset(self, **row: Any) -> str | None:
        self.env.reset(**row)  # the dataset row is the task: initial_count (and expected_count, for verify)
        return None

    def increment_counter(self, count: int) -> str:
        """Adds count to the counter.

        Args:
            count: How much to add.
        """
        return self._call("increment_counter", count=count)

    def get_counter_value(self) -> str:
        """Reads the counter."""
        return self._call("get_counter_value")

    def get_reward(self) -> float:
        return float(self.env.step({"type": "verify"}).reward)

    def _call(self, tool: str, **arguments: Any) -> str:
        observation = self.env.step(
            {"type": "call_tool", "tool_name": tool, "arguments": arguments}
        ).observation
        if observation["error"] is not None:
            return observation["error"]["message"]  # the model reads the tool's error and may retry
        return json.dumps(observation["result"]["data"])

    def close(self) -> None:
        self.env.close()


def test_trl_reads_the_tools_and_the_reward_comes_from_the_session(served: Served) -> None:
    CounterEnvironment.url, CounterEnvironment.headers = served.url, auth()
    envs = [CounterEnvironment(), CounterEnvironment()]  # TRL keeps one instance per rollout
    try:
        schema = get_json_schema(envs[0].increment_counter)
        assert schema["function"]["parameters"]["properties"]["count"]["type"] == "integer"
        assert get_json_schema(envs[0].get_counter_value)["function"]["name"] == "get_counter_value"
        for env, initial in zip(envs, (1, 5), strict=True):
            assert env.reset(prompt="count to 3", initial_count=initial, expected_count=3) is None
        assert json.loads(envs[0].increment_counter(count=2)) == {"success": True}
        assert json.loads(envs[1].get_counter_value()) == {"count": 5}
        assert "count" in envs[1].increment_counter(count="x")  # type: ignore[arg-type]
        assert [env.get_reward() for env in envs] == [1.0, 0.0]
        assert served.open_sessions("a") == 2
    finally:
        for env in envs:
            env.close()
    served.wait_closed("a")
