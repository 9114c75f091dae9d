"""The same recorded rows through a real gateway (uvicorn on 127.0.0.1): each ported environment served as
the NeMo Gym resources server of its name, driven as NeMo Gym's agents drive one — `seed_session` (its
cookie kept), `POST /<tool>` for every call, `verify` — one test per environment over all of its rows."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.reward_fns.environments import nemo_gym_mirror, workplace_data
from tests.reward_fns.environments.ports import PORTS, Port, rows
from tests.reward_fns.environments.replay import OverNeMoGym, replay_gymnasium_row, replay_tool_row
from tests.support.gateway import Gateway, start_gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp: Path = tmp_path_factory.mktemp("environments")
    servers = {port.server: {"environment": port.env.name} for port in PORTS}
    settings = {}
    for port in PORTS:
        # Without NeMo Gym's files its test skips, and the environment stays unconfigured.
        with contextlib.suppress(nemo_gym_mirror.MirrorMissing):
            settings.update({port.env.name: port.settings()} if port.settings else {})
    config = {"workers": 1, "nemo_gym": {"servers": servers}, "environments": {"settings": settings}}
    gw = start_gateway(tmp, config, None)
    try:
        yield gw
    finally:
        gw.proc.stop()


@pytest.mark.parametrize("port", PORTS, ids=[port.server for port in PORTS])
async def test_every_recorded_row_replays_equal_through_the_gateway(gateway: Gateway, port: Port) -> None:
    try:
        recorded = rows(port)
    except nemo_gym_mirror.MirrorMissing as missing:
        pytest.skip(str(missing))
    mismatches = {}
    for index, (row, task) in enumerate(recorded):
        async with httpx.AsyncClient(
            base_url=gateway.url, timeout=30
        ) as client:  # one rollout, one cookie jar
            driver = OverNeMoGym(client, port.server)
            if port.gymnasium:
                replay = await replay_gymnasium_row(driver, row, task)
            else:
                replay = await replay_tool_row(driver, row, task, port.verify_keys, port.output_view)
        if replay.mismatches:
            mismatches[index] = replay.mismatches
    assert mismatches == {}


async def test_hostile_moves_over_the_gateway_are_4xx_naming_the_field_and_leave_the_board(
    gateway: Gateway,
) -> None:
    async with httpx.AsyncClient(base_url=f"{gateway.url}/nemo_gym/grl_sokoban", timeout=30) as client:
        assert (
            await client.post("/seed_session", json={"seed": 84810, "dim_room": [5, 5]})
        ).status_code == 200
        board = (await client.post("/observe", json={})).json()
        wrong_type = await client.post("/step", json={"action": {"move": "Up"}})
        assert wrong_type.status_code == 422 and '"action"' in wrong_type.text
        too_deep = await client.post("/step", json={"response": {"output": [[[[[[[[[[[]]]]]]]]]]]}})
        assert too_deep.status_code == 422 and '"output"' in too_deep.text
        unplayable = await client.post("/step", json={"action": "<action>diagonal</action>"})
        assert unplayable.status_code == 400 and "no move found" in unplayable.text
        assert (await client.post("/observe", json={})).json() == board
        verdict = (
            await client.post("/verify", json={"reward": 10.0, "terminated": True, "response": {}})
        ).json()
        assert (verdict["reward"], verdict["info"]) == (0.0, {})

    async with httpx.AsyncClient(base_url=f"{gateway.url}/nemo_gym/example_multi_step", timeout=30) as client:
        task = {"expected_synonym_values": [711, 407], "minefield_label_value": 299}
        assert (await client.post("/seed_session", json=task)).status_code == 200
        huge = await client.post("/extract_synonym_values", json={"synonym_values": [711, 407] * 5000})
        assert huge.status_code == 422 and "synonym_values" in huge.text
        forged = {"expected_synonym_values": [1], "response": {"output": []}}
        assert (await client.post("/verify", json=forged)).json()["reward"] == 0.0

    async with httpx.AsyncClient(base_url=f"{gateway.url}/nemo_gym/calendar", timeout=30) as client:
        event = {"event_id": 0, "duration": 60, "constraint": None, "min_time": "10:00", "max_time": "16:00"}
        assert (await client.post("/seed_session", json={"exp_cal_state": {"0": event}})).status_code == 200
        unreadable = await client.post("/verify", json={"response": {"output": "[{...}]"}})
        assert unreadable.status_code == 422 and '"output"' in unreadable.text
        not_a_calendar = await client.post("/seed_session", json={"exp_cal_state": "all free"})
        assert not_a_calendar.status_code == 422 and "exp_cal_state" in not_a_calendar.text


async def test_workplace_assistant_over_the_gateway_refuses_hostile_calls_and_believes_only_the_session(
    gateway: Gateway,
) -> None:
    try:
        workplace_data.data_dir()
    except nemo_gym_mirror.MirrorMissing as missing:
        pytest.skip(str(missing))
    delete = {"name": "email_delete_email", "arguments": '{"email_id": "00000259"}'}
    async with httpx.AsyncClient(
        base_url=f"{gateway.url}/nemo_gym/workplace_assistant", timeout=30
    ) as client:
        seeded = await client.post(
            "/seed_session", json={"ground_truth": [delete], "id": 4, "category": "email"}
        )
        assert seeded.status_code == 200
        wrong_type = await client.post("/email_delete_email", json={"email_id": 259})
        assert wrong_type.status_code == 422 and '"email_id"' in wrong_type.text
        extra = await client.post("/email_delete_email", json={"email_id": "00000259", "path": "/etc/passwd"})
        assert extra.status_code == 422 and '"path"' in extra.text
        bad_pattern = await client.post(
            "/customer_relationship_manager_search_customers", json={"status": "("}
        )
        assert bad_pattern.status_code == 400 and "ToolError" in bad_pattern.text
        lookup = {"email_id": "00000259", "field": "sender/recipient"}
        found = await client.post("/email_get_email_information_by_id", json=lookup)
        assert found.json() == {"output": {"sender/recipient": "kofi.mensah@atlas.com"}}  # nothing changed
        claimed = {"response": {"output": [{"type": "function_call", **delete, "call_id": "c"}]}}
        assert (await client.post("/verify", json=claimed)).json()[
            "reward"
        ] == 0.0  # the body is not believed
        deleted = await client.post("/email_delete_email", json={"email_id": "00000259"})
        assert deleted.json() == {"output": "Email deleted successfully."}
        verdict = (await client.post("/verify", json={"ground_truth": [], "response": {"output": []}})).json()
        assert (verdict["reward"], verdict["differing_tables"]) == (1.0, [])
