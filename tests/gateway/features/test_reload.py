"""Hot reload serves the new code of group functions and python graders (one loader, content-addressed module
names), not only of reward functions: a real gateway process, its files edited, `POST /admin/reload`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.support.gateway import start_gateway

GROUP_FN = """
def compute_group_score(samples, scores):
    return [{value} for _ in scores]
"""
GRADER = """
def grade(sample, item):
    return {value}
"""


def write(folder: Path, group_value: float, grader_value: float) -> None:
    (folder / "group_fns.py").write_text(GROUP_FN.format(value=group_value))
    (folder / "graders.py").write_text(GRADER.format(value=grader_value))


def score(url: str, **body: Any) -> dict[str, Any]:
    resp = httpx.post(f"{url}/score", json={"data_source": "d", "solution_str": "x", **body}, timeout=30)
    assert resp.status_code == 200, resp.text
    result: dict[str, Any] = resp.json()
    assert result["status"] == "ok", result
    return result


def test_reload_serves_new_group_function_and_python_grader_code(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    write(code, 10.0, 0.25)
    config = {
        "workers": 1,
        "groups": {"functions": {"edited": {"path": f"{code / 'group_fns.py'}:compute_group_score"}}},
        "graders": {"edited_grader": {"type": "python", "path": f"{code / 'graders.py'}:grade"}},
    }
    gw = start_gateway(tmp_path, config, folder=None)
    try:
        member = {"reward_fn": "exact_match", "ground_truth": "x", "group_size": 1, "group_index": 0}
        assert score(gw.url, **member, group_id="before", group_fn="edited")["score"] == 10.0
        assert score(gw.url, reward_fn="edited_grader")["score"] == 0.25

        write(code, 20.0, 0.75)
        resp = httpx.post(f"{gw.url}/admin/reload", timeout=60)
        assert resp.status_code == 200, resp.text
        assert "edited_grader" in resp.json()["changed"]

        assert score(gw.url, **member, group_id="after", group_fn="edited")["score"] == 20.0
        assert score(gw.url, reward_fn="edited_grader", uid="new")["score"] == 0.75
    finally:
        gw.proc.stop()
