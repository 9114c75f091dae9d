"""The whole environment shown in docs/environments.md works as written: loaded from the page's first Python
block as a folder module is, its tools listed with their schemas, driven through `Sessions`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from bench.harness.processes import REPO_ROOT
from rewardfleet.services.gateway.environments.config import EnvironmentsConfig
from rewardfleet.services.gateway.environments.errors import SessionLimitExceeded
from rewardfleet.services.gateway.environments.loading import load_environments
from rewardfleet.services.gateway.environments.memory_store import MemorySessionStore
from rewardfleet.services.gateway.environments.metrics import SessionMetrics
from rewardfleet.services.gateway.environments.sessions import Sessions


async def test_the_documented_environment(tmp_path: Path) -> None:
    page = (REPO_ROOT / "docs" / "environments.md").read_text()
    code = re.search(r"```python\n(.*?)```", page, re.S)
    assert code is not None
    assert len(code.group(1).splitlines()) <= 45
    (tmp_path / "counter.py").write_text(code.group(1))
    environments = load_environments(None, [tmp_path])
    sessions = Sessions(
        environments, MemorySessionStore(), SessionMetrics(CollectorRegistry()), EnvironmentsConfig()
    )
    (increment, read) = sessions.tools("counter")
    assert increment.description == "Adds count to the counter."
    assert increment.input_schema["required"] == ["count"] and read.input_schema["properties"] == {}
    opened = await sessions.open("", "counter", {"initial_count": 3, "responses_create_params": {}})
    assert (await sessions.call("", opened.token, "increment_counter", {"count": 4})).output == {
        "success": True
    }
    refused = await sessions.call("", opened.token, "increment_counter", {"count": -1})
    assert refused.is_error and refused.output == "count must not be negative"
    assert (await sessions.call("", opened.token, "get_counter_value", {})).output == {"count": 7}
    assert (await sessions.verify("", opened.token, {"expected_count": 7})).reward == 1.0
    for _ in range(47):
        await sessions.call("", opened.token, "get_counter_value", {})
    with pytest.raises(SessionLimitExceeded):
        await sessions.call("", opened.token, "get_counter_value", {})
