"""A reward function, python grader or group function that raises a BaseException which is not an Exception
(`SystemExit(0)`, `KeyboardInterrupt`, `GeneratorExit`, a custom subclass, a `CancelledError` nobody asked
for) fails only its own sample, with a typed error that is logged; the gateway and its worker pool keep
serving. Before the fix a sync function's `SystemExit` broke the worker pool ("The Pool is not active" for
every later sample) and an async one's stopped the event loop or got a plain-text 500."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.gateway import Gateway, start_gateway

ATTACK_FILES = Path(__file__).parent / "attack_files"
KINDS = ["SystemExit", "SystemExit3", "KeyboardInterrupt", "GeneratorExit", "Custom"]
TYPE_OF = {"SystemExit3": "SystemExit"}
SAMPLE = {"data_source": "d", "solution_str": "x", "ground_truth": "x"}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("exits")
    folder = tmp / "fns"
    folder.mkdir()
    for name in ("exits_sync.py", "exits_async.py"):
        shutil.copy(ATTACK_FILES / name, folder / name)
    config = {
        "workers": 1,
        "pool_chunking": True,
        "graders": {
            "grade_sync": {"type": "python", "path": f"{folder / 'exits_sync.py'}:grade"},
            "grade_async": {"type": "python", "path": f"{folder / 'exits_async.py'}:grade"},
        },
        "groups": {
            "functions": {
                "group_exit": {"path": f"{folder / 'exits_sync.py'}:group_exit"},
                "group_exit_async": {"path": f"{folder / 'exits_async.py'}:group_exit_async"},
            }
        },
    }
    gateway = start_gateway(tmp, config, folder)
    yield gateway
    gateway.proc.stop()


def _score(gw: Gateway, fn: str, raise_: str | None = None, **extra: Any) -> dict[str, Any]:
    resp = httpx.post(
        f"{gw.url}/score",
        json={
            "data_source": "d",
            "solution_str": "x",
            "ground_truth": "x",
            "reward_fn": fn,
            "extra_info": {"raise": raise_} if raise_ else {},
            **extra,
        },
        timeout=60,
    )
    assert resp.status_code == 200, resp.text  # the envelope of a result, never a plain-text 500
    return dict(resp.json())


def _still_serving(gw: Gateway) -> None:
    assert httpx.get(f"{gw.url}/health", timeout=10).status_code == 200
    for fn in ("exits_sync", "exits_async"):  # the worker pool and the event loop are alive
        ok = _score(gw, fn)
        assert ok["status"] == "ok" and ok["score"] == 1.0, ok


@pytest.mark.parametrize("fn", ["exits_sync", "exits_async"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_function_raising_base_exceptions_fails_only_its_sample(gw: Gateway, fn: str, kind: str) -> None:
    uid = f"{fn}-{kind}"
    result = _score(gw, fn, kind, uid=uid)
    error_type = TYPE_OF.get(kind, kind)
    assert result["status"] == "error" and result["score"] is None, result
    assert result["error"]["type"] == error_type, result
    assert "only this sample failed" in result["error"]["message"]
    _still_serving(gw)
    line = next(line for line in gw.proc.log().splitlines() if f"uid={uid} " in line)  # logged
    assert f": {error_type}: " in line, line


def test_a_batch_with_an_exit_keeps_its_neighbours(gw: Gateway) -> None:
    """Chunked: the exit fails its own call, the other calls of the chunk get their scores."""
    samples = [
        {"data_source": "d", "solution_str": "x", "ground_truth": "x", "reward_fn": "exits_sync",
         "extra_info": {"raise": "SystemExit"} if i == 3 else {}}
        for i in range(8)
    ]  # fmt: skip
    resp = httpx.post(f"{gw.url}/score/batch", json={"samples": samples}, timeout=60)
    assert resp.status_code == 200, resp.text
    statuses = [r["status"] for r in resp.json()["results"]]
    assert statuses == ["ok"] * 3 + ["error"] + ["ok"] * 4, statuses
    _still_serving(gw)


def test_an_async_function_raising_cancelled_error_itself_fails_its_sample(gw: Gateway) -> None:
    result = _score(gw, "exits_async", "CancelledError")
    assert result["status"] == "error" and result["error"]["type"] == "CancelledError", result
    _still_serving(gw)


@pytest.mark.parametrize("grader", ["grade_sync", "grade_async"])
@pytest.mark.parametrize("kind", ["SystemExit", "KeyboardInterrupt", "Custom"])
def test_a_python_grader_raising_base_exceptions_fails_only_its_sample(
    gw: Gateway, grader: str, kind: str
) -> None:
    result = _score(gw, grader, kind)
    assert result["status"] == "error" and result["error"]["type"] == kind, result
    run = httpx.post(
        f"{gw.url}/graders/run",
        json={"grader": grader, "sample": {**SAMPLE, "extra_info": {"raise": kind}}},
        timeout=60,
    )
    assert run.status_code == 200, run.text
    assert run.json()["status"] == "error" and run.json()["error"]["type"] == kind, run.json()
    _still_serving(gw)


@pytest.mark.parametrize("group_fn", ["group_exit", "group_exit_async"])
@pytest.mark.parametrize("kind", ["SystemExit", "KeyboardInterrupt", "Custom"])
def test_a_group_function_raising_base_exceptions_fails_only_its_group(
    gw: Gateway, group_fn: str, kind: str
) -> None:
    body = {"data_source": "d", "solution_str": "x", "ground_truth": "x", "reward_fn": "exits_sync",
            "extra_info": {"group_raise": kind}, "group_id": f"{group_fn}-{kind}", "group_size": 1,
            "group_index": 0, "group_fn": group_fn}  # fmt: skip
    # The member's own score is fine; the group function's exit is the group's typed error.
    resp = httpx.post(f"{gw.url}/score", json=body, timeout=60)
    assert resp.status_code == 200, resp.text
    result = resp.json()
    assert result["status"] == "error" and result["error"]["type"] == "GroupFunctionError", result
    assert kind in result["error"]["message"]
    _still_serving(gw)
