"""POST /score against a real gateway: verl files unchanged, return shapes, injection, failures."""

from __future__ import annotations

import concurrent.futures
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.waiting import eventually
from tests.support.gateway import Gateway


def _ok(resp: httpx.Response) -> dict:
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "ok", body
    return body


def test_verl_sync_file_unchanged(gw: Gateway) -> None:
    sent = time.monotonic()
    right = _ok(
        gw.score(data_source="d", reward_fn="verl_sync", solution_str=" 42 ", ground_truth="42", uid="u1")
    )
    round_trip_s = time.monotonic() - sent
    wrong = _ok(gw.score(data_source="d", reward_fn="verl_sync", response="41", label="42"))
    assert (right["score"], wrong["score"]) == (1.0, 0.0)
    assert right["uid"] == "u1" and right["reward_fn"] == "verl_sync" and right["error"] is None
    assert right["fallback_score"] is False
    timings = right["timings"]
    # Seconds, and measured inside the request: no more than the round trip the client saw.
    assert timings["queue_s"] is not None and 0 <= timings["compute_s"] <= timings["total_s"] <= round_trip_s


def test_verl_async_file_unchanged(gw: Gateway, fake_router: str) -> None:
    body = _ok(gw.score(data_source="d", reward_fn="verl_async", solution_str="7", ground_truth=7))
    assert body["score"] == 1.0
    # dict extras come back as `extra`; the declared verl parameters were injected.
    assert body["extra"] == {"acc": True, "router": fake_router, "tokenizer_is_none": True}
    assert body["timings"]["queue_s"] is None
    assert (
        _ok(gw.score(data_source="d", reward_fn="verl_async", solution_str="8", ground_truth=7))["score"]
        == -1.0
    )


@pytest.mark.parametrize(
    ("kind", "score", "extra"),
    [
        ("float", 0.75, {}),
        ("int", 3.0, {}),
        ("bool", 1.0, {}),
        ("dict", 0.5, {"acc": True, "pred": "42", "nested": {"x": [1, 2]}, "bad": "nan"}),
        ("tuple", 0.25, {"tuple_rest": ["why", 7]}),
    ],
)
def test_sync_return_shapes(gw: Gateway, kind: str, score: float, extra: dict) -> None:
    body = _ok(gw.score(data_source="d", reward_fn="returns", solution_str="x", extra_info={"kind": kind}))
    assert (body["score"], body["extra"]) == (score, extra)


@pytest.mark.parametrize(("kind", "score"), [("float", 0.75), ("bool", 0.0), ("tuple", 0.25), ("dict", 0.5)])
def test_async_return_shapes(gw: Gateway, kind: str, score: float) -> None:
    body = _ok(
        gw.score(data_source="d", reward_fn="returns_async", solution_str="x", extra_info={"kind": kind})
    )
    assert body["score"] == score


@pytest.mark.parametrize(
    ("fn", "kind", "needle"),
    [
        ("returns", "str", "str '1.0'"),
        ("returns", "none", "NoneType None"),
        ("returns", "nan", "nan, not a finite number"),
        ("returns", "inf", "inf, not a finite number"),
        ("returns", "dict_noscore", "without a 'score' key"),
        ("returns", "list", "list [1.0]"),
        ("returns_async", "nan", "not a finite number"),
        ("returns_async", "none", "NoneType None"),
        ("returns_async", "str", "str 'x'"),
    ],
)
def test_invalid_returns_are_typed_errors(gw: Gateway, fn: str, kind: str, needle: str) -> None:
    resp = gw.score(data_source="d", reward_fn=fn, solution_str="x", extra_info={"kind": kind})
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "error" and body["score"] is None, body
    assert body["error"]["type"] == "InvalidReturn"
    assert needle in body["error"]["message"]


def test_injection_with_var_kwargs(gw: Gateway, fake_router: str) -> None:
    prompt = [{"role": "user", "content": "2+2?"}]
    body = _ok(gw.score(data_source="d", reward_fn="inject_all", solution_str="4", prompt=prompt, uid=5))
    extra = body["extra"]
    assert extra["kwargs"] == ["http_client", "prompt", "reward_router_address", "router_addresses", "uid"]
    assert extra["router"] == fake_router
    assert extra["routers"] == {"rm": fake_router, "judge": f"127.0.0.1:{gw.port}"}
    assert extra["client_type"] == "ClientSession"
    assert (extra["prompt"], extra["uid"]) == (prompt, 5)
    # Without prompt/uid in the request, **kwargs does not get them at all.
    bare = _ok(gw.score(data_source="d", reward_fn="inject_all", solution_str="4"))
    assert "prompt" not in bare["extra"]["kwargs"] and "uid" not in bare["extra"]["kwargs"]


def test_injection_by_name_with_http_client_and_reward_kwargs(gw: Gateway, fake_router: str) -> None:
    body = _ok(
        gw.score(
            data_source="d",
            reward_fn="inject_named",
            solution_str="4",
            prompt="2+2?",
            extra_info={"url": f"{gw.url}/health"},
        )
    )
    assert body["score"] == 2.0  # reward_kwargs scale=2.0 merged in
    assert body["extra"]["fetched_status"] == 200  # the shared aiohttp session works
    assert body["extra"]["router"] == fake_router
    assert body["extra"]["prompt"] == "2+2?" and body["extra"]["uid"] is None  # declared: None when absent


def test_injection_into_sync_worker(gw: Gateway, fake_router: str) -> None:
    body = _ok(gw.score(data_source="d", reward_fn="inject_sync", solution_str="4", uid="abc"))
    assert body["score"] == 0.5  # reward_kwargs bonus
    assert body["extra"]["router"] == fake_router and body["extra"]["uid"] == "abc"
    # **kwargs of a sync function: never http_client; reward_kwargs and valued injectables only.
    assert body["extra"]["kwargs"] == ["bonus", "router_addresses"]


def test_raising_function_is_a_200_error(gw: Gateway) -> None:
    for fn, err_type, needle in [
        ("raises", "ValueError", "cannot parse answer from 'abc'"),
        ("raises_async", "KeyError", "missing_field"),
    ]:
        resp = gw.score(data_source="d", reward_fn=fn, solution_str="abc")
        assert resp.status_code == 200
        body = resp.json()
        assert body["status"] == "error" and body["score"] is None and body["fallback_score"] is False
        assert body["error"]["type"] == err_type
        assert needle in body["error"]["message"]
        assert "raises" in body["error"]["message"]  # names the file and line


def test_on_error_score_is_flagged(gw: Gateway) -> None:
    body = gw.score(data_source="test/fallback", solution_str="abc").json()
    assert body["reward_fn"] == "raises_fallback"
    assert (body["status"], body["score"], body["fallback_score"]) == ("error", -1.0, True)
    assert body["error"]["type"] == "ValueError"
    hung = gw.score(data_source="d", reward_fn="hang_fallback", solution_str="x").json()
    assert (hung["status"], hung["score"], hung["fallback_score"]) == ("timeout", 0.0, True)


def _wait_for_two_idle_workers(gw: Gateway, timeout_s: float = 60) -> None:
    """Until two sleepy calls run at the same time (their intervals overlap), i.e. both workers are up."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:

        def overlap() -> bool:
            calls = [
                pool.submit(
                    gw.score,
                    data_source="d",
                    reward_fn="sleepy",
                    extra_info={"sleep_s": 0.2},
                    solution_str="x",
                )
                for _ in range(2)
            ]
            a, b = (_ok(c.result())["extra"] for c in calls)
            return bool(max(a["started"], b["started"]) < min(a["finished"], b["finished"]))

        eventually(overlap, timeout_s=timeout_s, interval_s=0, what="two workers running calls at once")


def test_hung_sync_function_times_out_and_gateway_keeps_answering(gw: Gateway) -> None:
    def timed_score(**body: Any) -> tuple[httpx.Response, float]:
        response = gw.score(**body)
        return response, time.monotonic()

    _wait_for_two_idle_workers(gw)  # an earlier test's killed worker may still be starting
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        sent = time.monotonic()
        hung = pool.submit(timed_score, data_source="d", reward_fn="hang", solution_str="x")
        # The other worker still scores sync samples while one is stuck.
        other = pool.submit(
            timed_score, data_source="d", reward_fn="verl_sync", solution_str="1", ground_truth="1"
        )
        probes: list[tuple[float, float]] = []  # (sent, answered) of each /health probe
        while not hung.done() and time.monotonic() - sent < 30:
            t0 = time.monotonic()
            assert httpx.get(f"{gw.url}/health", timeout=30).status_code == 200
            probes.append((t0, time.monotonic()))
            time.sleep(0.05)  # the probe's period (the behaviour measured), not a wait
        other_response, other_answered = other.result()
        hung_response, answered = hung.result()
    assert _ok(other_response)["score"] == 1.0
    body = hung_response.json()
    assert body["status"] == "timeout" and body["score"] is None
    assert body["error"]["type"] == "Timeout" and "1.0s" in body["error"]["message"]
    assert body["timings"]["total_s"] > 0.9  # it really ran into its 1 s limit
    # Overlap of intervals, not durations (the machine may be loaded): a /health probe and the other sync call
    # were sent and answered while the hung call was still running.
    assert [(a, b) for a, b in probes if a > sent and b < answered], probes
    assert other_answered < answered
    # The killed worker is replaced: sync calls keep working.
    for _ in range(3):
        assert _ok(gw.score(data_source="d", reward_fn="crash", solution_str="x"))["score"] == 1.0


def test_hung_async_function_times_out(gw: Gateway) -> None:
    body = gw.score(data_source="d", reward_fn="hang_async", solution_str="x").json()
    assert body["status"] == "timeout" and body["error"]["type"] == "Timeout"
    assert "0.5s" in body["error"]["message"] and body["timings"]["total_s"] > 0.45


@pytest.mark.parametrize(("how", "needle"), [("exit", "exit code 1"), ("segv", "SIGSEGV")])
def test_crashing_worker_fails_only_its_sample(gw: Gateway, how: str, needle: str) -> None:
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        crash = pool.submit(
            gw.score, data_source="d", reward_fn="crash", solution_str="x", extra_info={"how": how}
        )
        fine = [
            pool.submit(gw.score, data_source="d", reward_fn="verl_sync", solution_str="1", ground_truth="1")
            for _ in range(3)
        ]
        body = crash.result().json()
        assert all(_ok(f.result())["score"] == 1.0 for f in fine)
    assert body["status"] == "error" and body["score"] is None
    assert body["error"]["type"] == "WorkerCrashed" and needle in body["error"]["message"]
    pids = {
        _ok(gw.score(data_source="d", reward_fn="crash", solution_str="x"))["extra"]["pid"] for _ in range(4)
    }
    assert pids and gw.proc.pid not in pids


def _metric(gw: Gateway, name: str) -> float | None:
    for line in httpx.get(f"{gw.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return None


def test_pool_queue_wait_is_reported(gw: Gateway, tmp_path: Path) -> None:
    """Two workers, four calls held at a gate: two wait for a worker, the queue gauge shows it, and the
    waiting calls report a queue time that covers the time the gate was held shut (events, not sleeps)."""
    gate = tmp_path / "gate"
    hold_s = 0.3  # how long the gate stays shut once the queue is seen: the least wait the two must report
    _wait_for_two_idle_workers(gw)  # an earlier test's killed worker may still be starting
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = [
            pool.submit(
                gw.score, data_source="d", reward_fn="gated", solution_str="x", extra_info={"gate": str(gate)}
            )
            for _ in range(4)
        ]
        eventually(lambda: _metric(gw, "rewardfleet_gateway_pool_queue_depth") == 2.0, timeout_s=30,
                   what="pool queue depth 2", retry_on=())  # fmt: skip
        seen = time.monotonic()  # all four were submitted to the pool before this
        time.sleep(hold_s)  # a window in which nothing may pass the gate (the assertion), not a wait
        opened = time.monotonic()  # nothing passed the gate before this
        gate.touch()
        bodies = [_ok(f.result()) for f in futures]
    by_start = sorted(bodies, key=lambda b: b["extra"]["started"])
    first, waited = by_start[:2], by_start[2:]
    # A pool of two: each of the last two started only after one of the first two had finished.
    assert all(b["extra"]["started"] >= min(f["extra"]["finished"] for f in first) for b in waited)
    # At most two ran before the gate opened, so the other two started after it, and they were queued
    # before `seen`: their queue time covers [seen, opened] at least.
    assert all(b["timings"]["queue_s"] >= opened - seen >= hold_s for b in waited), waited
    assert all(b["timings"]["compute_s"] >= b["extra"]["finished"] - b["extra"]["started"] for b in bodies)
    assert _metric(gw, "rewardfleet_gateway_pool_queue_depth") == 0.0
