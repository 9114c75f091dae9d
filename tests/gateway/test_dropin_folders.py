"""Drop-in folders: reward files import their folder's helper modules and packages by plain name, in the
gateway (async functions) and in its worker processes (sync functions); helpers are not reward functions; a
reload re-imports an edited helper everywhere. A real gateway process, started as a user starts it."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd

FILES = {
    "my_helpers.py": """
        TAG = "v1"

        def parse(text):
            return text.strip().lower()
    """,
    # a package with __init__.py, and a namespace package (no __init__.py)
    "verl_rewards/__init__.py": "",
    "verl_rewards/gsm8k.py": """
        def answer(text):
            return text.split("####")[-1].strip()
    """,
    "textutil/case.py": """
        def fold(text):
            return text.casefold()
    """,
    "graded_sync.py": """
        import os

        import my_helpers
        from my_helpers import parse
        from textutil.case import fold
        from verl_rewards import gsm8k

        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            correct = fold(parse(gsm8k.answer(solution_str))) == fold(parse(ground_truth))
            return {"score": float(correct), "helper": my_helpers.TAG, "pid": os.getpid()}
    """,
    "graded_async.py": """
        import os

        import my_helpers
        from verl_rewards.gsm8k import answer

        async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            correct = my_helpers.parse(answer(solution_str)) == my_helpers.parse(ground_truth)
            return {"score": float(correct), "helper": my_helpers.TAG, "pid": os.getpid()}
    """,
}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, ChildProcess]]:
    tmp = tmp_path_factory.mktemp("dropin")
    folder = tmp / "fns"
    for name, source in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(source))
    port = free_port()
    cmd = rewardfleet_cmd("gateway", "--port", str(port), "--reward-fns", str(folder), "--workers", "1")
    child = ChildProcess(cmd, tmp / "gateway.log")
    url = f"http://127.0.0.1:{port}"
    try:
        child.wait_http(url + "/ready", timeout_s=90)
        yield url, folder, child
    finally:
        child.stop()


def score(http: httpx.Client, fn: str, solution: str, truth: str) -> dict[str, object]:
    resp = http.post(
        "/score", json={"reward_fn": fn, "data_source": "d", "solution_str": solution, "ground_truth": truth}
    )
    assert resp.status_code == 200, resp.text
    body: dict[str, object] = resp.json()
    assert body["status"] == "ok", body
    return body


def test_sibling_imports_in_gateway_and_workers_and_reload(gateway: tuple[str, Path, ChildProcess]) -> None:
    url, folder, child = gateway
    with httpx.Client(base_url=url, timeout=60) as http:
        names = {f["name"] for f in http.get("/reward_fns").json()["reward_fns"]}
        assert {"graded_sync", "graded_async"} <= names
        assert "my_helpers" not in names  # a helper without compute_score is not a reward function
        sync, async_ = (
            score(http, "graded_sync", "so #### 42 ", "42"),
            score(http, "graded_async", "#### 41", "42"),
        )
        assert sync["score"] == 1.0 and async_["score"] == 0.0
        assert sync["extra"]["helper"] == async_["extra"]["helper"] == "v1"  # type: ignore[index]
        assert sync["extra"]["pid"] != async_["extra"]["pid"]  # type: ignore[index]  # worker vs gateway
        old_versions = {f["name"]: f["version"] for f in http.get("/reward_fns").json()["reward_fns"]}

        helpers = folder / "my_helpers.py"
        helpers.write_text(helpers.read_text().replace('TAG = "v1"', 'TAG = "v2"'))
        resp = http.post("/admin/reload")
        assert resp.status_code == 200, resp.text
        sync, async_ = (
            score(http, "graded_sync", "#### 42", "42"),
            score(http, "graded_async", "#### 42", "42"),
        )
        assert sync["extra"]["helper"] == async_["extra"]["helper"] == "v2"  # type: ignore[index]
        new_versions = {f["name"]: f["version"] for f in http.get("/reward_fns").json()["reward_fns"]}
        # the reward files did not change, their helper did: a new version (no stale cached results)
        assert new_versions["graded_sync"] != old_versions["graded_sync"]
    assert "Traceback" not in child.log()
