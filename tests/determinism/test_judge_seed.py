"""The judge's sampling seed: derived from the question, stable across processes, sent on both routes.

The server here is the CPU model server in its *default* mode, where an unseeded sampled request draws from
the process's random state: a judge that samples (temperature 1.0) gives the same answer twice only because it
sends a seed, and different answers across calls when told not to (`generation.sampling_seed: false`).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardfleet.reward_fns.judge import compute_score
from rewardfleet.reward_fns.judging.seed import ROUTING_KEY_HEADER, routing_headers, sample_seed
from tests.support.model_server import RunningServer, start_server

MESSAGES = [{"role": "user", "content": "Is 2 + 2 = 4? Answer Verdict: correct or incorrect."}]


def test_seed_is_stable_and_in_sglang_range() -> None:
    seed = sample_seed(None, MESSAGES)
    # The same value in a fresh interpreter (no per-process hash salt) ...
    other = subprocess.run(
        [sys.executable, "-c", "from rewardfleet.reward_fns.judging.seed import sample_seed; "
         f"print(sample_seed(None, {MESSAGES!r}))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert int(other) == seed
    assert 0 <= seed < 2**63  # SGLang checks sampling_seed against the int64 range
    assert sample_seed("", MESSAGES) == seed  # no uid and an empty uid are the same key
    assert sample_seed("uid-1", MESSAGES) != seed
    assert sample_seed(None, [{**MESSAGES[0], "content": "Is 2 + 2 = 5?"}]) != seed
    assert routing_headers(seed) == {ROUTING_KEY_HEADER: f"{seed:016x}"}


@pytest.fixture(scope="module")
def judge_server(tmp_path_factory: pytest.TempPathFactory, log_dir: Path) -> Iterator[RunningServer]:
    from bench.harness.tiny_models import build_tiny_qwen2

    path = build_tiny_qwen2(
        tmp_path_factory.mktemp("seed-judge") / "lm", "causal", seed=5, max_position_embeddings=2048
    )
    server = start_server(path, log_dir, "--served-model-name", "tiny-judge", name="seed-judge")
    yield server
    server.process.stop()


def _ask(server: RunningServer, uid: str | None, **generation: Any) -> str:
    result = asyncio.run(
        compute_score(
            "chat", "Two plus two is four.", "4", {"question": "What is 2 + 2?"},
            reward_router_address=server.url.removeprefix("http://"), model="tiny-judge", uid=uid,
            generation={"max_tokens": 40, "temperature": 1.0, **generation},
        )
    )  # fmt: skip
    return str(result["judge_response"])


def test_judge_sends_the_seed(judge_server: RunningServer) -> None:
    seeded = {_ask(judge_server, f"u{i}") for i in range(4)}
    assert len(seeded) == 1, seeded  # the uid is not part of the seed by default
    unseeded = {_ask(judge_server, None, sampling_seed=False) for _ in range(6)}
    assert len(unseeded) > 1, "without a seed the server's own RNG should vary the draw"
    by_uid = {_ask(judge_server, f"u{i}", seed_uid=True) for i in range(4)}
    assert len(by_uid) > 1, by_uid


def test_judge_sends_the_seed_on_generate(judge_server: RunningServer) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(judge_server.process.cmd[judge_server.process.cmd.index(
        "--model-path") + 1])  # fmt: skip

    def ask(**generation: Any) -> str:
        result = asyncio.run(
            compute_score(
                "chat", "Two plus two is four.", "4", {"question": "What is 2 + 2?"},
                reward_router_address=judge_server.url.removeprefix("http://"), model="tiny-judge",
                reward_model_tokenizer=tokenizer,
                generation={"max_tokens": 40, "temperature": 1.0, "use_generate": True, **generation},
            )
        )  # fmt: skip
        return str(result["judge_response"])

    assert len({ask() for _ in range(3)}) == 1
    assert len({ask(sampling_seed=False) for _ in range(6)}) > 1


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/generate", {"text": "hi", "sampling_params": {"sampling_seed": 2**64}}, "sampling_seed"),
        ("/generate", {"text": "hi", "sampling_params": {"sampling_seed": -(2**63) - 1}}, "sampling_seed"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "seed": 2**63}, "seed"),
    ],
)  # fmt: skip
def test_a_seed_outside_int64_is_a_400_naming_it(
    judge_server: RunningServer, route: str, body: dict[str, Any], field: str
) -> None:
    import httpx

    resp = httpx.post(judge_server.url + route, json=body, timeout=30)
    assert resp.status_code == 400, resp.text
    assert field in resp.text
