"""workplace_assistant's own mechanics: its data is configuration (a folder read at start-up, refused
naming the file), sessions share the base tables but never each other's changes, a session's state is its
changes (not a copy of the data), and an agent's arguments cannot reach a file or stall the gateway: wrong
types and sizes are refused naming the field, bad or slow patterns are ToolErrors, and no tool opens a
file."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rewardfleet.reward_fns.environments._workplace_tables import DataError, WorkplaceData
from rewardfleet.reward_fns.environments.workplace_assistant import WorkplaceAssistant
from tests.nemo_gym import gym_mirror
from tests.reward_fns import nemo_gym_rows
from tests.reward_fns.environments import nemo_gym_mirror, workplace_data
from tests.reward_fns.environments.replay import InProcess, ToolFailure
from tests.reward_fns.environments.workplace_random_calls import random_calls

_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _opened is not None and event == "open":
        _opened.append(str(args[0]))


sys.addaudithook(_audit)  # records only while a test sets `_opened`


@pytest.fixture(scope="module")
def data() -> Path:
    try:
        return workplace_data.data_dir()
    except nemo_gym_mirror.MirrorMissing as missing:
        pytest.skip(str(missing))


def _env(data: Path) -> WorkplaceAssistant:
    return WorkplaceAssistant(WorkplaceAssistant.Settings(data_dir=data))


async def _driver(data: Path, ground_truth: Any = ()) -> InProcess:
    driver = InProcess(_env(data))
    await driver.seed({"ground_truth": list(ground_truth)})
    return driver


async def test_without_a_data_folder_it_loads_but_refuses_to_seed_naming_the_setting() -> None:
    with pytest.raises(RuntimeError, match=r"environments\.settings\.workplace_assistant\.data_dir"):
        await InProcess(WorkplaceAssistant()).seed({"ground_truth": []})


def test_a_data_folder_missing_a_file_or_holding_a_broken_table_is_refused_naming_it(
    data: Path, tmp_path: Path
) -> None:
    with pytest.raises(DataError, match=r"processed/calendar_events\.csv: .*No such file"):
        partial = tmp_path / "partial"
        (partial / "processed").mkdir(parents=True)
        (partial / "processed" / "emails.csv").write_text("email_id\n1\n")
        WorkplaceData.load(partial)
    broken = tmp_path / "broken"
    for source in data.rglob("*.csv"):
        target = broken / source.relative_to(data)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    with (broken / "processed" / "project_tasks.csv").open("a") as table:
        table.write("\n1,2,3,4,5,6,7\n")
    with pytest.raises(DataError, match=r"project_tasks\.csv: row 302 has 7 cells for 6 columns"):
        WorkplaceData.load(broken)


async def test_sessions_share_the_base_tables_but_not_their_changes(data: Path) -> None:
    env = _env(data)
    first, second = InProcess(env), InProcess(env)
    await first.seed({"ground_truth": []})
    await second.seed({"ground_truth": []})
    lookup = {"email_id": "00000259", "field": "subject"}
    assert (await first.call("email_delete_email", {"email_id": "00000259"}))[
        "output"
    ] == "Email deleted successfully."
    assert (await first.call("email_get_email_information_by_id", lookup))["output"] == "Email not found."
    found = await second.call("email_get_email_information_by_id", lookup)
    assert found["output"] == {"subject": "Task Update on Create wireframe for homepage"}
    assert env.data is not None and env.data.tables["emails"].has("email_id", "00000259")
    assert first.session is not None and second.session is not None
    assert second.session.state["log"] == []
    assert len(json.dumps(first.session.state)) < 200  # the session holds its change, not ~290 KB of tables


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("email_delete_email", {"email_id": 259}, "email_id"),
        ("email_delete_email", {"email_id": ["00000259"]}, "email_id"),
        ("email_delete_email", {}, "email_id"),
        ("email_delete_email", {"email_id": "00000259", "path": "/etc/passwd"}, "path"),
        ("email_send_email", {"recipient": "a@b.c", "subject": "s", "body": "x" * 20_001}, "body"),
        ("email_search_emails", {"page_size": 0}, "page_size"),
        ("calendar_search_events", {"page": {"n": 1}}, "page"),
        ("company_directory_find_email_address", {"name": "x" * 1001}, "name"),
    ],
)
async def test_arguments_of_wrong_type_size_or_name_are_refused_naming_the_field(
    data: Path, tool: str, arguments: dict[str, Any], field: str
) -> None:
    driver = await _driver(data)
    with pytest.raises(ValidationError) as refused:
        driver.env.tool_definitions[tool].parse(arguments)
    assert [error["loc"][0] for error in refused.value.errors()] == [field]
    assert driver.session is not None and driver.session.state["log"] == []


async def test_bad_or_slow_patterns_are_tool_errors_and_change_nothing(data: Path) -> None:
    driver = await _driver(data)
    bad = await driver.call("customer_relationship_manager_search_customers", {"customer_name": "[unclosed"})
    assert isinstance(bad, ToolFailure) and "unterminated character set" in bad.message
    slow = await driver.call("company_directory_find_email_address", {"name": r"(?:(?:.*){1,50}){1,50}Z"})
    assert isinstance(slow, ToolFailure) and "took longer than 1s" in slow.message
    assert driver.session is not None and driver.session.state["log"] == []


async def test_no_tool_opens_a_file_whatever_its_arguments(data: Path) -> None:
    global _opened
    driver = await _driver(data)
    hostile = str(data / "processed" / "emails.csv")
    calls = [
        (
            "analytics_create_plot",
            {
                "time_min": "../../etc",
                "time_max": "/passwd",
                "value_to_plot": "total_visits",
                "plot_type": "bar",
            },
        ),
        ("email_get_email_information_by_id", {"email_id": hostile, "field": "../body"}),
        ("company_directory_find_email_address", {"name": "/etc/passwd"}),
        (
            "email_send_email",
            {"recipient": "root@localhost.x", "subject": hostile, "body": "file:///etc/shadow"},
        ),
        (
            "project_management_update_task",
            {"task_id": "00000149", "field": "../../task_name", "new_value": "x"},
        ),
        ("customer_relationship_manager_search_customers", {"customer_name": hostile}),
    ]
    _opened = []
    try:
        outputs = [await driver.call(tool, arguments) for tool, arguments in calls]
        await driver.verify({})
    finally:
        opened, _opened = _opened, None
    assert opened == []
    assert (
        outputs[0]["output"] == "plots/../../etc_/passwd_total_visits_bar.png"
    )  # a name in a table, no file


async def test_a_hostile_ground_truth_is_refused_or_skipped_never_a_crash(data: Path) -> None:
    env = _env(data)
    with pytest.raises(ValidationError):
        env.Task.model_validate({"ground_truth": [{"name": "email_delete_email", "arguments": "{}"}] * 101})
    skipped = [
        {"name": "email_delete_email", "arguments": "not json"},
        {"name": "email_delete_email", "arguments": "[1, 2]"},
        {"name": "email_delete_email", "arguments": json.dumps({"email_id": 5})},
        {"name": "open", "arguments": json.dumps({"path": "/etc/passwd"})},
        {"name": "customer_relationship_manager_search_customers", "arguments": '{"customer_name": "("}'},
    ]
    driver = await _driver(data, skipped)
    assert (await driver.verify({})).reward == 1.0  # nothing ran: the fresh tables, as the agent left them


@pytest.mark.parametrize("name", ["example_rollouts.jsonl", "example.jsonl"])
def test_the_wheels_other_copy_of_the_rows_is_the_pinned_one(name: str) -> None:
    """NeMo Gym 0.4.0's wheel also ships the server's rows as `environments/workplace_assistant/data/`: the
    pinned commit's bytes, by the git blob id the manifest pins for `resources_servers/.../data/<name>`."""
    pinned = gym_mirror.pinned_blob(f"{gym_mirror.SERVERS}/workplace_assistant/data/{name}")
    assert pinned is not None, f"{name}: the manifest pins no such file of workplace_assistant"
    try:
        with zipfile.ZipFile(nemo_gym_rows.wheel_path()) as wheel:
            data = wheel.read(f"environments/workplace_assistant/data/{name}")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    assert gym_mirror.blob_id(data) == pinned


async def test_the_tables_a_process_keeps_answer_as_a_replay_of_the_log(data: Path) -> None:
    """A session's last tables, kept by the process that served its last call, stand for replaying its
    log: every answer and the verdict are the same as a process that replays every time."""
    keeping, replaying = _env(data), _env(data)
    replaying._remember = lambda *_: None  # type: ignore[method-assign]
    first, second = InProcess(keeping), InProcess(replaying)
    for driver in (first, second):
        await driver.seed(
            {"ground_truth": [{"name": "email_delete_email", "arguments": '{"email_id": "1"}'}]}
        )
    for name, arguments in random_calls(4, 200):
        assert await first.call(name, arguments) == await second.call(name, arguments), (name, arguments)
    assert first.session is not None and second.session is not None
    assert first.session.state == second.session.state and len(first.session.state["log"]) > 20
    assert keeping._recent and not replaying._recent
    assert await first.verify({}) == await second.verify({})
