"""An environment's own settings (`environments.settings.<name>`): validated by its `Settings` model at
start-up and given to its constructor; what cannot be applied stops start-up naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardfleet.services.gateway.environments.config import EnvironmentsConfig
from rewardfleet.services.gateway.environments.loading import load_environments
from rewardfleet.services.gateway.errors import LoadError

MODULE = """
from pydantic import BaseModel, ConfigDict, Field

from rewardfleet.services.environments import Environment


class GreeterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = "hello"
    repeat: int = Field(default=1, ge=1)


class Greeter(Environment):
    name = "greeter"
    Settings = GreeterSettings


class Plain(Environment):
    name = "plain"
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "greeter.py").write_text(MODULE)
    return tmp_path


def test_settings_reach_the_environment_and_defaults_apply_without_them(folder: Path) -> None:
    config = EnvironmentsConfig(folders=[folder], settings={"greeter": {"greeting": "hi", "repeat": 2}})
    loaded = load_environments(None, config.folders, config.settings)
    assert (loaded["greeter"].settings.greeting, loaded["greeter"].settings.repeat) == ("hi", 2)
    assert load_environments(None, [folder])["greeter"].settings.greeting == "hello"


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"greeter": {"repeat": 0}}, "environments.settings.greeter.repeat"),
        ({"greeter": {"colour": "red"}}, "environments.settings.greeter.colour"),
        ({"plain": {}}, "environments.settings.plain: environment 'plain' takes no settings"),
        ({"nowhere": {}}, "environments.settings: 'nowhere' not loaded"),
    ],
)
def test_settings_that_cannot_apply_stop_start_up_naming_the_key(
    folder: Path, settings: dict[str, dict[str, object]], named: str
) -> None:
    with pytest.raises(LoadError) as refused:
        load_environments(None, [folder], settings)
    assert named in str(refused.value)


def test_a_builtin_whose_settings_fail_stops_start_up_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(LoadError) as refused:
        load_environments(
            "rewardfleet.reward_fns.environments", [], {"workplace_assistant": {"data_dir": str(missing)}}
        )
    assert "WorkplaceAssistant() failed" in str(refused.value) and str(missing) in str(refused.value)
