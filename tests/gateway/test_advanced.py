"""Issue 9 against a real gateway process: versions, composites, groups, graders, judge fallback, hot
reload and drift metrics. The judge "pool" here is a dead port (fallback: unreachable); the stand-in judge
and encoder pools behind real routers are exercised in tests/reward_fns_remote/test_advanced_e2e.py."""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.processes import free_port, wait_until_in_flight
from tests.support.gateway import Gateway, start_gateway

FILES = Path(__file__).parent / "advanced_files"


def advanced_config(folder: Path) -> dict[str, Any]:
    return {
        "workers": 1,
        "routers": {"judge": f"127.0.0.1:{free_port()}"},  # nobody listens: the judge is unreachable
        "functions": {"judge": {"timeout_s": 5.0}, "slow_async": {"timeout_s": 10.0}},
        "fallbacks": {"judge": {"fn": "exact"}},
        "composites": {
            "combo": {
                "components": [
                    {"fn": "exact", "weight": 0.5},
                    {"fn": "length_async", "weight": 0.5, "kwargs": {"scale": 0.01}},
                ]
            },
            "gated": {
                "gate": {"fn": "exact", "min_score": 1.0},
                "components": [{"fn": "length_async"}],
                "gate_closed_score": -1.0,
            },
            "strict": {"components": [{"fn": "exact"}, {"fn": "boom_async"}]},
            "lenient": {"components": [{"fn": "exact"}, {"fn": "boom_async"}], "on_component_error": "skip"},
            "counted": {
                "components": [{"fn": "exact"}, {"fn": "boom_async"}],
                "on_component_error": "score",
                "error_score": -2.0,
            },
        },
        "groups": {
            "timeout_s": 1.5,
            "max_open_groups": 4,
            "functions": {
                "group_total": {"path": f"{folder / 'group_sum.py'}:total", "kwargs": {"offset": 0.5}}
            },
        },
        "graders": {
            "eq": {"type": "string_check", "operation": "eq"},
            "has_keyword": {
                "type": "string_check",
                "operation": "ilike",
                "reference": "{{ item.keyword }}",
            },
            "fuzzy": {"type": "text_similarity", "evaluation_metric": "fuzzy_match"},
            "rouge": {"type": "text_similarity", "evaluation_metric": "rouge_l", "pass_threshold": 0.5},
            "py": {"type": "python", "path": f"{folder / 'grade_py.py'}:grade"},
            "mix": {
                "type": "multi",
                "graders": {"a": "eq", "b": {"type": "string_check", "operation": "like"}},
                "calculate_output": "0.25 * a + 0.75 * b",
            },
        },
    }


@pytest.fixture(scope="module")
def adv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("adv")
    folder = tmp / "fns"
    shutil.copytree(FILES, folder)
    gw = start_gateway(tmp, advanced_config(folder), folder)
    try:
        yield gw
    finally:
        gw.proc.stop()


def score(gw: Gateway, **body: Any) -> dict[str, Any]:
    body.setdefault("data_source", "test/adv")
    resp = gw.score(**body)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def versions(gw: Gateway) -> dict[str, str]:
    return {f["name"]: f["version"] for f in httpx.get(f"{gw.url}/reward_fns").json()["reward_fns"]}


# ---- versioning ---
def test_every_result_carries_its_function_version(adv: Gateway) -> None:
    known = versions(adv)
    for name in ("exact", "length_async", "combo", "eq"):
        result = score(adv, solution_str="4", ground_truth="4", reward_fn=name)
        assert result["version"] == known[name] and len(known[name]) == 12
    # A component with other kwargs is another reward: the composite's version differs from a bare sum.
    assert len({known["combo"], known["gated"], known["exact"], known["length_async"]}) == 4


# ---- composites ---
def test_composite_weights_components_and_reports_each(adv: Gateway) -> None:
    result = score(adv, solution_str="four", ground_truth="four", reward_fn="combo")
    assert result["status"] == "ok"
    assert result["score"] == pytest.approx(0.5 * 1.0 + 0.5 * 4 * 0.01)
    comps = result["extra"]["components"]
    assert [(c["fn"], c["status"], c["weight"]) for c in comps] == [
        ("exact", "ok", 0.5),
        ("length_async", "ok", 0.5),
    ]
    assert comps[1]["score"] == pytest.approx(0.04) and comps[1]["extra"] == {"chars": 4}


def test_composite_gate_closed_skips_components(adv: Gateway) -> None:
    closed = score(adv, solution_str="wrong", ground_truth="right", reward_fn="gated")
    assert closed["score"] == -1.0 and closed["status"] == "ok"
    assert closed["extra"]["gate"]["open"] is False and closed["extra"]["components"] == []
    opened = score(adv, solution_str="right", ground_truth="right", reward_fn="gated")
    assert opened["score"] == pytest.approx(0.5) and opened["extra"]["gate"]["open"] is True


def test_failed_component_fails_the_composite_unless_configured(adv: Gateway) -> None:
    strict = score(adv, solution_str="x", ground_truth="x", reward_fn="strict")
    assert strict["status"] == "error" and strict["score"] is None
    assert strict["error"]["type"] == "CompositeComponentFailed"
    boom = strict["extra"]["components"][1]
    assert boom["status"] == "error" and boom["error"]["type"] == "RuntimeError"
    lenient = score(adv, solution_str="x", ground_truth="x", reward_fn="lenient")
    assert lenient["status"] == "ok" and lenient["score"] == pytest.approx(
        2.0
    )  # 1.0 renormalised onto weight 2
    assert lenient["extra"]["components"][1]["skipped"] is True
    counted = score(adv, solution_str="x", ground_truth="x", reward_fn="counted")
    assert counted["score"] == pytest.approx(1.0 - 2.0)


# ---- groups ---
def _post(gw: Gateway, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{gw.url}/score", json={"data_source": "test/adv", **body}, timeout=30)


def test_group_answers_every_member_once_complete_any_order_with_duplicates(adv: Gateway) -> None:
    answers = ["a", "bb", "ccc", "dddd"]
    posts = [
        {
            "solution_str": s,
            "ground_truth": "bb",
            "reward_fn": "length_async",
            "group_id": "g1",
            "group_size": 4,
            "group_index": i,
            "group_fn": "group_total",
            "uid": f"u{i}",
        }
        for i, s in enumerate(answers)
    ]
    posts += [posts[1], posts[3]]  # retries of members 1 and 3
    random.Random(7).shuffle(posts)
    with ThreadPoolExecutor(len(posts)) as ex:
        results = [r.json() for r in ex.map(lambda b: _post(adv, b), posts)]
    total = sum(len(s) * 0.1 for s in answers) + 0.5
    for body, result in zip(posts, results, strict=True):
        assert result["status"] == "ok", result
        assert result["score"] == pytest.approx(total)
        assert result["extra"]["sample_score"] == pytest.approx(len(body["solution_str"]) * 0.1)
        assert result["extra"]["group"]["fn"] == "group_total" and result["extra"]["group"]["size"] == 4
        assert result["uid"] == body["uid"]
    late = _post(adv, posts[0]).json()  # a retry after the answer gets the same answer
    assert late["score"] == pytest.approx(total)


def test_group_builtin_rank_normalise_and_uid_members(adv: Gateway) -> None:
    posts = [
        {
            "solution_str": s,
            "ground_truth": "",
            "reward_fn": "length_async",
            "group_id": "g2",
            "group_size": 3,
            "uid": f"r{i}",
            "group_fn": "rank_normalise",
        }
        for i, s in enumerate(["xx", "x", "xxx"])
    ]
    with ThreadPoolExecutor(3) as ex:
        results = [r.json() for r in ex.map(lambda b: _post(adv, b), posts)]
    assert [r["score"] for r in results] == [0.5, 0.0, 1.0]


def test_group_batch_and_errors(adv: Gateway) -> None:
    samples = [
        {
            "data_source": "t",
            "solution_str": "yy",
            "ground_truth": "yy",
            "reward_fn": "exact",
            "group_id": "g3",
            "group_size": 2,
            "group_index": i,
            "group_fn": "best_of_n_bonus",
        }
        for i in range(2)
    ]
    samples[1]["solution_str"] = "no"
    resp = httpx.post(f"{adv.url}/score/batch", json={"samples": samples}, timeout=30)
    assert [r["score"] for r in resp.json()["results"]] == [2.0, 0.0]
    no_key = _post(adv, {"solution_str": "a", "reward_fn": "exact", "group_id": "g4", "group_size": 2})
    assert no_key.status_code == 422 and no_key.json()["error"]["type"] == "GroupRequestError"
    bad_fn = _post(
        adv,
        {
            "solution_str": "a",
            "reward_fn": "exact",
            "group_id": "g5",
            "group_size": 2,
            "uid": 1,
            "group_fn": "nope",
        },
    )
    assert bad_fn.status_code == 422 and "rank_normalise" in bad_fn.json()["error"]["message"]


def test_group_timeout_answers_members_with_a_clear_status(adv: Gateway) -> None:
    started = time.monotonic()
    result = _post(
        adv,
        {
            "solution_str": "abc",
            "reward_fn": "length_async",
            "group_id": "g6",
            "group_size": 3,
            "group_index": 0,
        },
    ).json()
    # Answered by the group's 1.5 s timer (the status and message say so), not before it: no upper bound,
    # a group that never timed out would leave the request unanswered and the client's 30 s timeout fail it.
    assert time.monotonic() - started >= 1.4
    assert result["status"] == "group_timeout" and result["score"] is None
    assert "1 of 3 members within 1.5s" in result["error"]["message"]
    assert result["extra"]["sample_score"] == pytest.approx(0.3)
    assert result["error"]["type"] == "GroupTimeout" and result["extra"]["group"]["received"] == 1


def test_open_groups_are_bounded(adv: Gateway) -> None:
    def member(gid: str) -> httpx.Response:
        return _post(
            adv,
            {"solution_str": "a", "reward_fn": "exact", "group_id": gid, "group_size": 2, "group_index": 0},
        )

    with ThreadPoolExecutor(5) as ex:
        futures = [ex.submit(member, f"open{i}") for i in range(4)]
        wait_until_in_flight(adv.url, 4)  # all four groups opened (not a fixed sleep)
        refused = member("open-too-many")
        assert refused.status_code == 503 and refused.json()["error"]["type"] == "TooManyOpenGroups"
        assert all(f.result().json()["status"] == "group_timeout" for f in futures)


# ---- graders ---
@pytest.mark.parametrize(
    ("grader", "solution", "truth", "extra_info", "expected"),
    [
        ("eq", "42", "42", {}, 1.0),
        ("eq", "42 ", "42", {}, 0.0),
        ("has_keyword", "The ANSWER is", "", {"keyword": "answer"}, 1.0),
        ("fuzzy", "hallo", "hello", {}, 0.8),
        ("rouge", "a b c d", "a c d", {}, 6 / 7),
        ("py", "it is 42.", "42", {}, 1.0),
        ("py", "no", "42", {}, 0.25),
        ("mix", "x 42", "42", {}, 0.75),
    ],
)
def test_graders_score_through_score_route(
    adv: Gateway, grader: str, solution: str, truth: str, extra_info: dict[str, Any], expected: float
) -> None:
    result = score(adv, solution_str=solution, ground_truth=truth, extra_info=extra_info, reward_fn=grader)
    assert result["status"] == "ok", result
    assert result["score"] == pytest.approx(expected)


def test_graders_validate_and_run_endpoints(adv: Gateway) -> None:
    ok = httpx.post(
        f"{adv.url}/graders/validate",
        json={"grader": {"type": "text_similarity", "evaluation_metric": "bleu"}},
    )
    assert ok.json() == {"valid": True, "errors": []}
    for bad, needle in [
        ({"type": "string_check", "operation": "equals"}, "operation"),
        (
            {"type": "multi", "graders": {"a": "eq"}, "calculate_output": "__import__('os').system('x')"},
            "may be called",
        ),
        ({"type": "multi", "graders": {"a": "missing"}, "calculate_output": "a"}, "no grader named"),
        ({"type": "string_check", "operation": "eq", "input": "{{ sample.secret }}"}, "sample has only"),
    ]:
        body = httpx.post(f"{adv.url}/graders/validate", json={"grader": bad}).json()
        assert body["valid"] is False and needle in " ".join(body["errors"]), body
    run = httpx.post(
        f"{adv.url}/graders/run",
        json={
            "grader": {"type": "text_similarity", "evaluation_metric": "bleu"},
            "sample": {
                "data_source": "d",
                "solution_str": "the cat sat on the mat",
                "ground_truth": "the cat sat on the mat",
            },
        },
    ).json()
    assert run["status"] == "ok" and run["score"] == pytest.approx(1.0)
    named = httpx.post(
        f"{adv.url}/graders/run",
        json={
            "grader": "has_keyword",
            "sample": {"data_source": "d", "solution_str": "x", "ground_truth": "x"},
        },
    ).json()
    assert named["status"] == "error" and "keyword" in named["error"]["message"]


def test_bad_grader_config_stops_start_up(tmp_path: Path) -> None:
    config = {
        "workers": 1,
        "graders": {"g": {"type": "multi", "graders": {"a": "ghost"}, "calculate_output": "a"}},
    }
    with pytest.raises(RuntimeError, match="no grader named 'ghost'"):
        start_gateway(tmp_path, config, None)


# ---- judge fallback ---
def test_judge_fallback_scores_and_flags_when_the_pool_is_unreachable(adv: Gateway) -> None:
    result = score(adv, solution_str="7", ground_truth="7", prompt="What is 3 + 4?", reward_fn="judge")
    assert result["status"] == "ok" and result["score"] == 1.0, result
    flag = result["extra"]["fallback"]
    assert flag["from"] == "judge" and flag["fn"] == "exact" and flag["reason"] == "unreachable"


# ---- drift metrics ---
def test_drift_counters_give_a_mean_per_data_source(adv: Gateway) -> None:
    for solution in ("abcd", "ab"):
        score(adv, data_source="drift/ds", solution_str=solution, ground_truth="", reward_fn="length_async")
    text = httpx.get(f"{adv.url}/metrics").text
    labels = '{data_source="other",reward_fn="length_async"}'
    values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines() if labels in line}
    pos = values[f"rewardfleet_reward_score_positive_sum_total{labels}"]
    count = values[f"rewardfleet_reward_score_count{labels}"]
    assert f"rewardfleet_reward_score_negative_sum_total{labels}" in values
    assert f"rewardfleet_reward_score_squared_sum_total{labels}" in values
    assert count >= 2 and pos > 0


# ---- hot reload (last: it edits the gateway's files) ---
def test_reload_swaps_versions_in_flight_calls_finish_on_the_old_one(adv: Gateway) -> None:
    path = adv.folder / "slow_async.py"
    before = versions(adv)["slow_async"]
    with ThreadPoolExecutor(1) as ex:
        in_flight = ex.submit(
            _post, adv, {"solution_str": "abc", "reward_fn": "slow_async", "extra_info": {"sleep_s": 2.0}}
        )
        wait_until_in_flight(adv.url, 1)  # the call runs the old code (not a fixed sleep)
        path.write_text(path.read_text().replace("return float(len(solution_str))", "return 100.0"))
        resp = httpx.post(f"{adv.url}/admin/reload", timeout=30)
        assert resp.status_code == 200, resp.text
        report = resp.json()
        assert report["changed"]["slow_async"]["old"] == before
        after = report["changed"]["slow_async"]["new"]
        fresh = score(adv, solution_str="abc", reward_fn="slow_async")
        assert (fresh["score"], fresh["version"]) == (100.0, after)
        old = in_flight.result().json()
        assert (old["score"], old["version"]) == (3.0, before)


def test_reload_with_a_broken_file_keeps_the_old_version(adv: Gateway) -> None:
    path = adv.folder / "exact.py"
    good = path.read_text()
    before = versions(adv)["exact"]
    path.write_text("def compute_score(:\n")
    try:
        resp = httpx.post(f"{adv.url}/admin/reload", timeout=30)
        assert resp.status_code == 409
        assert (
            resp.json()["error"]["type"] == "ReloadFailed" and "exact.py" in resp.json()["error"]["message"]
        )
        result = score(adv, solution_str="1", ground_truth="1", reward_fn="exact")
        assert (result["score"], result["version"]) == (1.0, before)
    finally:
        path.write_text(good)
