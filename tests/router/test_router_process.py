"""RouterProcess against the real sglang-router binary and stand-in SGLang replicas on loopback."""

from __future__ import annotations

import signal
from typing import Any

import httpx
import pytest

from bench.harness.router_process import RouterProcess
from bench.harness.waiting import eventually
from tests.sglang_standin import standin_embedding, standin_reward
from tests.support.router import Replica, ReplicaFactory, RouterFactory, pid_exists


def _post(router: RouterProcess, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{router.url}{path}", json=body, timeout=30)


def _metric(router: RouterProcess, name: str) -> float:
    text = httpx.get(f"http://127.0.0.1:{router.cfg.prometheus_port}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


@pytest.fixture
def judges(start_replica: ReplicaFactory) -> list[Replica]:
    return [start_replica("judge", "j1"), start_replica("judge", "j2")]


@pytest.fixture
def rewards(start_replica: ReplicaFactory) -> list[Replica]:
    return [start_replica("reward", "r1"), start_replica("reward", "r2")]


def test_router_registers_both_and_routes_generation(
    judges: list[Replica], start_router: RouterFactory
) -> None:
    router = start_router([r.url for r in judges])
    assert router.address == f"127.0.0.1:{router.cfg.port}"
    readiness = router.readiness()
    assert (readiness.ready, readiness.healthy_workers, readiness.total_workers) == (True, 2, 2)
    assert sorted(w.url for w in router.list_workers()) == sorted(r.url for r in judges)

    seen = []
    for i in range(8):
        resp = _post(router, "/generate", {"text": f"q{i}", "sampling_params": {"max_new_tokens": 64}})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["text"] == "The answer is correct. \\boxed{1}"
        assert body["meta_info"]["finish_reason"] == {"type": "stop", "matched": 2}
        seen.append(resp.headers["x-standin-replica"])
    chat = _post(
        router,
        "/v1/chat/completions",
        {
            "model": "judge",
            "messages": [{"role": "user", "content": "<standin-reply>Score: 7</standin-reply>"}],
        },
    )
    assert chat.status_code == 200, chat.text
    assert chat.json()["choices"][0]["message"]["content"] == "Score: 7"
    # round_robin alternates strictly between the two replicas
    assert seen.count("j1") == seen.count("j2") == 4
    assert [r.stats()["served"].get("/generate", 0) for r in judges] == [4, 4]


def test_router_routes_embeddings_and_classify_not_native_classify(
    rewards: list[Replica], start_router: RouterFactory
) -> None:
    router = start_router([r.url for r in rewards])
    text = "<|im_start|>user\n1+1?<|im_end|>\n<|im_start|>assistant\n2<|im_end|>"
    for _ in range(2):
        emb = _post(router, "/v1/embeddings", {"model": "rm", "input": text})
        assert emb.status_code == 200, emb.text
        assert emb.json()["data"][-1]["embedding"] == [standin_reward(text)]
    cls = _post(router, "/v1/classify", {"model": "rm", "input": text})
    assert cls.status_code == 200, cls.text
    assert cls.json()["data"][0]["probs"] == [1.0]
    # The router proxies neither SGLang's native /classify nor /encode; both replicas took work.
    assert _post(router, "/classify", {"text": text}).status_code == 404
    assert _post(router, "/encode", {"text": text}).status_code == 404
    assert all(r.stats()["total"] >= 1 for r in rewards)
    # `model` is required on the OpenAI embedding/classify routes (422 from the router's own parser).
    assert _post(router, "/v1/embeddings", {"input": text}).status_code == 422


def test_router_rewrites_bodies_and_rejects_batched_generate(
    judges: list[Replica], start_router: RouterFactory
) -> None:
    router = start_router([judges[0].url])
    resp = _post(router, "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 4}, "x_custom": 1})
    assert resp.status_code == 200
    received = judges[0].stats()["last_body"]["/generate"]
    assert "x_custom" not in received  # unknown fields are dropped
    assert received["text"] == "hi" and received["sampling_params"]["max_new_tokens"] == 4
    assert _post(router, "/generate", {"text": ["a", "b"]}).status_code == 422


def test_encoder_pool_embeddings(start_replica: ReplicaFactory, start_router: RouterFactory) -> None:
    enc = start_replica("encoder", "e1", "--dim", "16")
    router = start_router([enc.url])
    resp = _post(router, "/v1/embeddings", {"model": "enc", "input": ["a cat", "a dog"]})
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert [d["embedding"] for d in data] == [standin_embedding("a cat", 16), standin_embedding("a dog", 16)]


def test_5xx_retried_on_other_worker_4xx_not(judges: list[Replica], start_router: RouterFactory) -> None:
    router = start_router([r.url for r in judges], retry_initial_backoff_ms=1, retry_max_backoff_ms=10)
    judges[0].control(fail_rate=1.0, fail_status=503)
    for i in range(6):
        resp = _post(router, "/generate", {"text": f"x{i}"})
        assert resp.status_code == 200, resp.text
        assert resp.headers["x-standin-replica"] == "j2"
    assert judges[0].stats()["failed"].get("/generate", 0) >= 1
    assert _metric(router, "smg_worker_retries_total") >= 1

    judges[0].control(fail_rate=1.0, fail_status=400)
    judges[1].control(fail_rate=1.0, fail_status=400)
    before = sum(r.stats()["failed"].get("/generate", 0) for r in judges)
    resp = _post(router, "/generate", {"text": "bad"})
    assert resp.status_code == 400
    assert resp.json()["error"]["message"].startswith("injected failure")  # the worker's body passes through
    after = sum(r.stats()["failed"].get("/generate", 0) for r in judges)
    assert after - before == 1  # a 4xx is answered as-is, never retried


def test_replica_killed_mid_run(judges: list[Replica], start_router: RouterFactory) -> None:
    router = start_router([r.url for r in judges], retry_initial_backoff_ms=1, retry_max_backoff_ms=10)
    statuses = []
    for i in range(20):
        if i == 5:
            judges[1].child.stop()  # the replica dies between requests
        statuses.append(_post(router, "/generate", {"text": f"k{i}"}).status_code)
    assert statuses == [200] * 20
    eventually(lambda: router.readiness().healthy_workers == 1, timeout_s=10, interval_s=0.2)
    readiness = router.readiness()
    assert (readiness.ready, readiness.healthy_workers, readiness.total_workers) == (True, 1, 2)
    dead = next(w for w in router.list_workers() if w.url == judges[1].url)
    assert dead.is_healthy is False

    judges[0].child.stop()
    eventually(lambda: not router.readiness().ready, timeout_s=10, interval_s=0.2)
    assert router.readiness().ready is False
    resp = _post(router, "/generate", {"text": "none left"})
    assert resp.status_code == 503
    assert resp.json()["error"]["code"] == "no_available_workers"


def test_add_and_remove_worker_at_runtime(start_replica: ReplicaFactory, start_router: RouterFactory) -> None:
    first = start_replica("judge", "a")
    router = start_router([first.url])
    second = start_replica("judge", "b")
    worker_id = router.add_worker(second.url, wait_healthy_s=15)
    assert worker_id
    assert router.readiness().healthy_workers == 2
    replicas = {_post(router, "/generate", {"text": f"t{i}"}).headers["x-standin-replica"] for i in range(4)}
    assert replicas == {"a", "b"}

    router.remove_worker(second.url, wait_gone_s=15)
    assert [w.url for w in router.list_workers()] == [first.url]
    served_before = second.stats()["total"]
    for i in range(4):
        assert _post(router, "/generate", {"text": f"u{i}"}).headers["x-standin-replica"] == "a"
    assert second.stats()["total"] == served_before


def test_router_without_workers_is_live_not_ready(start_router: RouterFactory) -> None:
    router = start_router([], wait=False)
    readiness = router.wait_ready(timeout_s=30)  # no workers: liveness is enough
    assert readiness.ready is False and readiness.total_workers == 0


def test_stop_leaves_no_process(judges: list[Replica], start_router: RouterFactory) -> None:
    router = start_router([r.url for r in judges])
    pid = router.pid
    assert pid is not None and pid_exists(pid) and router.is_alive()
    code = router.stop()
    assert code != -signal.SIGKILL  # it exited on SIGTERM; stop() did not have to kill it
    assert not router.is_alive()
    assert not pid_exists(pid)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{router.url}/liveness", timeout=2)


def test_start_failure_reports_the_log(start_router: RouterFactory, judges: list[Replica]) -> None:
    first = start_router([judges[0].url])
    # Same Prometheus port: the binary panics at start, and wait_ready says so with the log.
    clash = RouterProcess(
        first.cfg.model_copy(update={"port": first.cfg.port + 1}), first.log_path.with_suffix(".clash.log")
    )
    clash.start()
    try:
        with pytest.raises(Exception, match="Address already in use"):
            clash.wait_ready(timeout_s=20)
    finally:
        clash.stop()
