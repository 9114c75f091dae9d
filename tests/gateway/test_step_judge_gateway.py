"""`step_judge` through a real gateway whose `judge` router is a stand-in on 127.0.0.1 speaking the OpenAI
chat protocol with a scripted answer: the result's `step_scores` are known exactly."""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from tests.support.gateway import Gateway, start_gateway


class _Judge(http.server.BaseHTTPRequestHandler):
    replies: ClassVar[list[str]] = []
    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_GET(self) -> None:  # the gateway's router check
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.bodies.append(body)
        content = self.replies.pop(0)
        answer = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 40, "completion_tokens": 6, "total_tokens": 46},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def judge_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    tmp: Path = tmp_path_factory.mktemp("step-judge-gw")
    config = {
        "workers": 1,
        "routers": {"judge": f"127.0.0.1:{server.server_address[1]}"},
        "functions": {"step_judge": {"reward_kwargs": {"model": "j", "aggregate_by": "first_error"}}},
    }
    gateway = start_gateway(tmp, config, None)
    try:
        yield gateway
    finally:
        gateway.proc.stop()
        server.shutdown()
        server.server_close()


def test_step_judge_through_the_gateway(judge_gw: Gateway) -> None:
    _Judge.replies.append("Step 1 multiplies wrongly.\n\\boxed{1}")
    resp = httpx.post(
        f"{judge_gw.url}/score",
        json={
            "data_source": "math",
            "reward_fn": "step_judge",
            "messages": [
                {"role": "user", "content": "What is (2 + 3) * 4?"},
                {"role": "assistant", "content": "2 + 3 = 5.\n\n5 * 4 = 21.\n\nSo the answer is 21."},
            ],
            "ground_truth": "20",
            "extra_info": {"question": "What is (2 + 3) * 4?"},
        },
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "ok", body
    assert body["step_scores"] == [1.0, 0.0, 0.0] and body["score"] == pytest.approx(1 / 3)  # first_error
    assert body["extra"]["first_wrong_step"] == 1 and "step_scores" not in body["extra"]
    [sent] = _Judge.bodies
    assert sent["model"] == "j" and "Step 1: 5 * 4 = 21." in sent["messages"][-1]["content"]
    regex = re.compile(sent["regex"], re.DOTALL)  # three steps: the verdict can only be -1, 0, 1 or 2
    assert regex.fullmatch("\\boxed{2}") and not regex.fullmatch("\\boxed{3}")
