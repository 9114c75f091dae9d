"""The Harbor pieces that need no sandbox: task folders checked as they load (each problem named), the
image cache key, and reward files read as Harbor reads them."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rewardfleet.reward_fns.environments._harbor.image import ImageBuilder
from rewardfleet.reward_fns.environments._harbor.rewards import VerifierFailed, read_rewards
from rewardfleet.reward_fns.environments._harbor.task import HarborTaskInvalid, find_tasks, load_task
from rewardfleet.reward_fns.environments.harbor import SHIPPED_TASKS

TXT, JSON = "/logs/verifier/reward.txt", "/logs/verifier/reward.json"


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "my-task"
    shutil.copytree(SHIPPED_TASKS / "exact-file-content", folder)
    return folder


def test_the_shipped_tasks_load_with_their_limits() -> None:
    tasks = find_tasks(SHIPPED_TASKS)
    assert set(tasks) == {
        "exact-file-content",
        "fix-failing-test",
        "sales-report",
        "shell-pipeline",
        "sqlite-import",
    }
    for task in tasks.values():
        assert task.solution.is_file() and task.instruction.startswith("# ")
        assert (task.cpus, task.memory_mb, task.storage_mb, task.agent_timeout_s) == (1, 512, 256, 600)
        assert 30 <= task.verifier_timeout_s <= 60
        assert "tests" not in (task.environment_dir / "Dockerfile").read_text()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: (f / "tests/test.sh").unlink(), "tests/test.sh is missing"),
        (lambda f: (f / "instruction.md").unlink(), "instruction.md is missing"),
        (
            lambda f: (f / "environment/Dockerfile").write_text("FROM x\nCOPY tests/ /tests/\n"),
            "must not copy tests/ or solution/",
        ),
        (
            lambda f: (f / "environment/Dockerfile").write_text("FROM x\nadd ../solution /s\n"),
            "must not copy tests/ or solution/",
        ),
        (
            lambda f: (f / "task.toml").write_text("[verifier]\ntimeout_sec = -1\n"),
            r"\[verifier\] timeout_sec",
        ),
        (
            lambda f: (f / "task.toml").write_text("[environment]\nmemory_mb = 1.5\n"),
            "memory_mb must be an integer",
        ),
        (lambda f: (f / "task.toml").write_text("[environment]\ncpus = true\n"), "cpus must be a number"),
        (lambda f: (f / "task.toml").write_text("agent = 3\n"), r"\[agent\] must be a table"),
        (lambda f: (f / "task.toml").write_text("[agent\n"), "task.toml"),
        (lambda f: (f / "instruction.md").write_bytes(b"x" * (65 << 10)), "instruction.md is over"),
    ],
)
def test_a_bad_task_folder_is_refused_naming_the_problem(
    task_dir: Path, change: Callable[[Path], object], message: str
) -> None:
    change(task_dir)
    with pytest.raises(HarborTaskInvalid, match=message):
        load_task(task_dir)


def test_a_task_name_must_be_plain(tmp_path: Path) -> None:
    folder = tmp_path / "Bad Name"
    shutil.copytree(SHIPPED_TASKS / "exact-file-content", folder)
    with pytest.raises(HarborTaskInvalid, match="name"):
        load_task(folder)


def test_the_image_key_follows_the_environment_folder_only(task_dir: Path, tmp_path: Path) -> None:
    builder = ImageBuilder(tmp_path / "cache")
    shipped = builder.folder(load_task(SHIPPED_TASKS / "exact-file-content"))
    assert builder.folder(load_task(task_dir)) == shipped  # same environment/: one image for both
    (task_dir / "tests/test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task_dir / "instruction.md").write_text("# other\n")
    assert ImageBuilder(tmp_path / "cache").folder(load_task(task_dir)) == shipped
    (task_dir / "environment/Dockerfile").write_text("FROM localhost/rewardfleet/harbor-base:bookworm\n")
    assert ImageBuilder(tmp_path / "cache").folder(load_task(task_dir)) != shipped
    assert builder.built(load_task(task_dir)) is None  # nothing built in an empty cache, and nothing run


def test_rewards_are_read_as_harbor_reads_them() -> None:
    assert read_rewards({TXT: b" 0.5\n"}, "") == {"reward": 0.5}
    both = {JSON: b'{"reward": 1, "style": 0.25, "ok": true, "note": "x"}', TXT: b"0"}
    assert read_rewards(both, "") == {"reward": 1.0, "style": 0.25}  # json first; bools and text ignored
    assert read_rewards({JSON: b'{"tests": 0.75}', TXT: b"0.75"}, "") == {"tests": 0.75, "reward": 0.75}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "wrote neither"),
        ({TXT: b""}, "does not hold a number"),
        ({TXT: b"pass"}, "does not hold a number"),
        ({TXT: b"inf"}, "not a finite number"),
        ({JSON: b"[1]"}, "must hold an object"),
        ({JSON: b"{"}, "is not JSON"),
        ({JSON: b'{"tests": 1}'}, "no numeric 'reward'"),
        ({JSON: b'{"reward": 1e999}'}, "not a finite number"),
    ],
)
def test_a_reward_that_is_not_one_is_an_error(files: dict[str, bytes], message: str) -> None:
    with pytest.raises(VerifierFailed, match=message) as caught:
        read_rewards(files, "TAIL OF THE OUTPUT")
    assert caught.value.args[0].endswith("TAIL OF THE OUTPUT")
