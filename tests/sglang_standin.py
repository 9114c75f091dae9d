"""A stand-in for a GPU SGLang server, speaking SGLang's HTTP protocol for what it serves.

Real SGLang needs CUDA, so tests put this behind the real sglang-router instead. Shapes follow SGLang's
`srt/entrypoints/http_server.py` and `srt/entrypoints/openai/protocol.py`; outputs are deterministic:

- `judge` (a generation model): `/generate`, `/v1/chat/completions`, `/v1/completions` answer with the
  process's canned text, or with the text between `<standin-reply>` and `</standin-reply>` if the prompt holds
  one (so a test can choose each verdict per request).
- `reward` (an `--is-embedding` reward model with one label): `/v1/embeddings`, `/classify`, `/encode` answer
  with the one-element embedding `[standin_reward(text)]`; `/v1/classify` answers with softmax probs `[1.0]`.
- `encoder` (an embedding model): `/v1/embeddings`, `/encode` answer with `standin_embedding(text, dim)`, a
  unit-length hashed bag of words, so equal texts have cosine 1 and shared words raise the similarity.

- `judge` also answers `/v1/score` (next-token probabilities of `label_token_ids`): with token ids as given,
  with text tokenised like SGLang does (one pseudo-BOS id 1 in front), so a test can tell the two apart.

Probes behave like SGLang 0.5.23's: `/ready` is cheap (503 until started); `/health` and `/health_generate`
take `--health-delay-s` (default 1 s, what SGLang's generation-backed check waits at least) before the 200.

Every answer carries `x-standin-replica` and `x-standin-served` headers; `GET /metrics` shows
`sglang:num_requests_total` and `GET /standin/stats` the per-route counts, so tests can see the spread over
replicas. `POST /standin/control` flips health, the failure rate or a delay at run time for fault tests.

Run: `python -m tests.sglang_standin --port P --mode judge|reward|encoder [--replica-id X]
[--canned-text "..."] [--fail-rate 0.2] [--fail-status 503] [--startup-delay-s 1] [--delay-ms 0]`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

Mode = Literal["judge", "reward", "encoder"]
DEFAULT_CANNED_TEXT = "The answer is correct. \\boxed{1}"
EOS_TOKEN_ID = 2
_REPLY_RE = re.compile(r"<standin-reply>(.*?)</standin-reply>", re.DOTALL)
_WORD_RE = re.compile(r"\w+")
# The routes that count as served work (probes and the stand-in's own routes are not counted).
WORK_ROUTES = (
    "/generate",
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/score",
    "/v1/embeddings",
    "/v1/classify",
    "/classify",
    "/encode",
)


def standin_reward(text: str) -> float:
    """The stand-in reward model's score of `text`: a stable hash mapped into [-5, 5), rounded to 6 places."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    unit = int.from_bytes(digest[:8], "big") / 2**64
    return round(unit * 10.0 - 5.0, 6)


def standin_embedding(text: str, dim: int = 64) -> list[float]:
    """The stand-in encoder's embedding of `text`: hashed signed bag of lower-cased words, unit length."""
    vec = [0.0] * dim
    for word in _WORD_RE.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        slot = int.from_bytes(digest[:4], "big") % dim
        vec[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        vec[0] = 1.0
        return vec
    return [v / norm for v in vec]


def _token_ids(text: str) -> list[int]:
    """A deterministic pseudo-tokenisation: one id per UTF-8 byte (ids 3..258; 0-2 are special)."""
    return [b + 3 for b in text.encode("utf-8")]


@dataclass
class StandinConfig:
    mode: Mode = "judge"
    replica_id: str = "0"
    canned_text: str = DEFAULT_CANNED_TEXT
    model_path: str = ""
    fail_rate: float = 0.0
    fail_status: int = 503
    startup_delay_s: float = 0.0
    delay_ms: float = 0.0
    dim: int = 64
    seed: int = 0
    port: int = 30000
    health_delay_s: float = 1.0

    def served_model_name(self) -> str:
        return self.model_path or f"standin-{self.mode}"


@dataclass
class StandinState:
    config: StandinConfig
    started_at: float = field(default_factory=time.monotonic)
    healthy: bool = True
    served: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    abandoned: Counter[str] = field(default_factory=Counter)  # client went away during the delay
    last_body: dict[str, Any] = field(default_factory=dict)  # route -> the last JSON body received
    rng: random.Random = field(default_factory=random.Random)

    @property
    def total_served(self) -> int:
        return sum(self.served.values())


class _StandinError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _openai_error(status: int, message: str) -> JSONResponse:
    # SGLang's ErrorResponse envelope on /v1/* routes.
    err_type = "BadRequestError" if status < 500 else "InternalServerError"
    body = {"object": "error", "message": message, "type": err_type, "param": None, "code": status}
    return JSONResponse(body, status_code=status)


def _native_error(status: int, message: str) -> JSONResponse:
    # What SGLang's native handlers answer for a ValueError from the tokenizer manager.
    return JSONResponse({"error": {"message": message}}, status_code=status)


def _validation_error(status: int, message: str) -> JSONResponse:
    # SGLang's RequestValidationError handler: `ErrorResponse` on every route, native ones included.
    body = {"object": "error", "message": message, "type": "Bad Request", "param": None, "code": status}
    return JSONResponse(body, status_code=status)


class _TypeInvalid(Exception):
    """A body SGLang's FastAPI validation (its request dataclass' field types) refuses: `ErrorResponse`."""


class _ContractError(Exception):
    """A `/generate` body SGLang's JSON-contract gate refuses: answered as `{"error": "<text>"}`."""


_SAMPLING_INT_FIELDS = ("max_new_tokens", "top_k", "n")
_SAMPLING_FLOAT_FIELDS = ("temperature", "top_p", "min_p")


def _check_sampling_contract(params: Any) -> None:
    """The serde-style type check SGLang 0.5.23 runs on `sampling_params` fields (api/v1/api_types.py)."""
    for item in params if isinstance(params, list) else [params]:
        if not isinstance(item, dict):
            continue  # FastAPI's own validation refuses these first
        for key, value in item.items():
            bad_number = not isinstance(value, int | float) or isinstance(value, bool)
            if key in _SAMPLING_INT_FIELDS and value is not None and (bad_number or isinstance(value, float)):
                raise _ContractError(f"invalid type: {_serde_unexpected(value)}, expected i64")
            if key in _SAMPLING_FLOAT_FIELDS and value is not None and bad_number:
                raise _ContractError(f"invalid type: {_serde_unexpected(value)}, expected f64")


def _serde_unexpected(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f'string "{value}"'
    return "sequence" if isinstance(value, list) else "map"


def _texts_of(value: Any, field_name: str) -> list[str]:
    """Strings of an `input`/`text` field that may be a string, a list of strings, or token ids."""
    if isinstance(value, str):
        if not value.strip():
            raise _StandinError(400, "Input cannot be empty or whitespace only")
        return [value]
    if isinstance(value, list) and value:
        if all(isinstance(v, str) for v in value):
            return list(value)
        if all(isinstance(v, int) for v in value):
            return [" ".join(str(v) for v in value)]
        if all(isinstance(v, list) for v in value):
            return [" ".join(str(t) for t in v) for v in value]
    if value == []:
        raise _StandinError(400, f"'{field_name}' must not be empty")
    raise _TypeInvalid(f"'{field_name}' must be a string, list of strings or token ids")


def create_app(config: StandinConfig) -> FastAPI:
    state = StandinState(config=config, rng=random.Random(config.seed))
    app = FastAPI(title=f"sglang-standin {config.mode} {config.replica_id}")
    app.state.standin = state
    is_generation = config.mode == "judge"

    async def on_http(_request: Request, exc: Exception) -> JSONResponse:
        # SGLang's HTTPException handler (unknown path, wrong method): ErrorResponse with type=str(status).
        assert isinstance(exc, StarletteHTTPException)
        code = exc.status_code
        body = {"object": "error", "message": str(exc.detail), "type": str(code), "param": None, "code": code}
        return JSONResponse(body, status_code=code)

    app.add_exception_handler(StarletteHTTPException, on_http)

    def headers() -> dict[str, str]:
        return {"x-standin-replica": config.replica_id, "x-standin-served": str(state.total_served)}

    def ready() -> bool:
        return state.healthy and time.monotonic() - state.started_at >= config.startup_delay_s

    async def serve(
        route: str,
        request: Request,
        handler: Callable[[dict[str, Any]], Awaitable[Response | dict[str, Any] | list[Any]]],
        openai: bool,
        modes: tuple[Mode, ...],
    ) -> Response:
        make_error = _openai_error if openai else _native_error
        if config.mode not in modes:
            return make_error(400, f"{route} is not served by a {config.mode} model")
        if not ready():
            return make_error(503, "server is not ready")
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return (make_error if openai else _validation_error)(400, "request body is not JSON")
        if not isinstance(body, dict):
            return (make_error if openai else _validation_error)(400, "request body must be a JSON object")
        state.last_body[route] = body
        if config.delay_ms > 0 and await _client_left_within(request, config.delay_ms / 1000.0):
            # SGLang aborts a request whose client disconnected (tokenizer_manager checks
            # `request.is_disconnected()` while waiting): nothing is served, so nothing is counted as served.
            state.abandoned[route] += 1
            return Response(status_code=499)
        if config.fail_rate > 0 and state.rng.random() < config.fail_rate:
            state.failed[route] += 1
            return make_error(config.fail_status, f"injected failure on replica {config.replica_id}")
        try:
            result = await handler(body)
        except _StandinError as exc:
            return make_error(exc.status, exc.message)
        except _ContractError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except _TypeInvalid as exc:
            return (make_error if openai else _validation_error)(400, str(exc))
        state.served[route] += 1
        if isinstance(result, Response):
            result.headers.update(headers())
            return result
        return JSONResponse(result, headers=headers())

    def reply_for(prompt: str) -> str:
        found = _REPLY_RE.findall(prompt)
        return found[-1] if found else config.canned_text

    def generated(prompt: str, max_new_tokens: int | None) -> tuple[str, list[int], dict[str, Any]]:
        text = reply_for(prompt)
        ids = _token_ids(text)
        if max_new_tokens is not None and len(ids) > max_new_tokens:
            ids = ids[:max_new_tokens]
            text = bytes(i - 3 for i in ids).decode("utf-8", errors="ignore")
            return text, ids, {"type": "length", "length": max_new_tokens}
        return text, ids, {"type": "stop", "matched": EOS_TOKEN_ID}

    # --- registration probes and health -------------------------------------------------------------
    @app.get("/ready")
    async def ready_probe() -> Response:
        return Response(status_code=200 if ready() else 503)

    @app.get("/health")
    @app.get("/health_generate")
    async def health() -> Response:
        # SGLang's /health sends a one-token generation, sleeps 1 s, then checks that the scheduler answered.
        if not ready():
            return Response(status_code=503)
        await asyncio.sleep(config.health_delay_s)
        return Response(status_code=200 if ready() else 503)

    def model_info_body() -> dict[str, Any]:
        arch = {
            "judge": "Qwen2ForCausalLM",
            "reward": "Qwen2ForRewardModel",
            "encoder": "BertModel",
        }[config.mode]
        return {
            "model_path": config.served_model_name(),
            "served_model_name": config.served_model_name(),
            "tokenizer_path": config.served_model_name(),
            "is_generation": is_generation,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": "auto",
            "reasoning_parser": None,
            "tool_call_parser": None,
            "disaggregation_mode": "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": "bert" if config.mode == "encoder" else "qwen2",
            "architectures": [arch],
        }

    @app.get("/model_info")
    @app.get("/get_model_info")
    async def model_info() -> dict[str, Any]:
        return model_info_body()

    @app.get("/server_info")
    @app.get("/get_server_info")
    async def server_info() -> dict[str, Any]:
        return {
            "model_path": config.served_model_name(),
            "tokenizer_path": config.served_model_name(),
            "served_model_name": config.served_model_name(),
            "is_embedding": not is_generation,
            "host": "127.0.0.1",
            "port": config.port,
            "tp_size": 1,
            "dp_size": 1,
            "pp_size": 1,
            "max_total_num_tokens": 32768,  # from the scheduler info, not a server arg
            "internal_states": [{"last_gen_throughput": 0.0}],
            "version": "0.0.0-standin",
        }

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        name = config.served_model_name()
        card = {
            "id": name,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "sglang",
            "root": name,
            "parent": None,
            "max_model_len": 32768,
        }
        return {"object": "list", "data": [card]}

    # --- generation ---------------------------------------------------------------------------------
    async def do_generate(body: dict[str, Any]) -> Response | dict[str, Any] | list[Any]:
        _check_sampling_contract(body.get("sampling_params"))
        if "text" in body and body["text"] is not None:
            prompts = _texts_of(body["text"], "text")
            single = isinstance(body["text"], str)
        elif "input_ids" in body and body["input_ids"] is not None:
            prompts = _texts_of(body["input_ids"], "input_ids")
            single = bool(body["input_ids"]) and isinstance(body["input_ids"][0], int)
        else:
            raise _StandinError(400, "Either text or input_ids should be provided.")
        params = body.get("sampling_params") or {}
        outs = []
        for prompt in prompts:
            text, ids, finish = generated(prompt, params.get("max_new_tokens"))
            meta = {
                "id": uuid.uuid4().hex,
                "finish_reason": finish,
                "prompt_tokens": len(_token_ids(prompt)),
                "weight_version": "default",
                "num_retractions": 0,
                "reasoning_tokens": 0,
                "completion_tokens": len(ids),
                "cached_tokens": 0,
                "e2e_latency": 0.001,
            }
            outs.append({"text": text, "output_ids": ids, "meta_info": meta})
        if body.get("stream"):
            return _sse([outs[0]] if single else outs, done=True)
        return outs[0] if single else outs

    def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        return {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
            "prompt_tokens_details": None,
            "reasoning_tokens": 0,
        }

    def finish_reason(finish: dict[str, Any]) -> tuple[str, Any]:
        return ("length", None) if finish["type"] == "length" else ("stop", finish.get("matched"))

    async def do_chat(body: dict[str, Any]) -> Response | dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _StandinError(400, "messages must be a non-empty list")
        prompt = "\n".join(_message_text(m) for m in messages)
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        text, ids, finish = generated(prompt, max_tokens)
        reason, matched = finish_reason(finish)
        created = int(time.time())
        cid = uuid.uuid4().hex
        model = body.get("model") or config.served_model_name()
        if body.get("stream"):
            chunk = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": text},
                        "logprobs": None,
                        "finish_reason": reason,
                        "matched_stop": matched,
                    }
                ],
            }
            return _sse([chunk], done=True)
        message = {"role": "assistant", "content": text, "reasoning_content": None, "tool_calls": None}
        choice = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": reason,
            "matched_stop": matched,
        }
        return {
            "id": cid,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [choice],
            "usage": usage(len(_token_ids(prompt)), len(ids)),
            "metadata": {"weight_version": "default"},
        }

    async def do_completions(body: dict[str, Any]) -> dict[str, Any]:
        prompts = _texts_of(body.get("prompt"), "prompt")
        choices = []
        prompt_tokens = completion_tokens = 0
        for i, prompt in enumerate(prompts):
            text, ids, finish = generated(prompt, body.get("max_tokens", 16))
            reason, matched = finish_reason(finish)
            choices.append(
                {"index": i, "text": text, "logprobs": None, "finish_reason": reason, "matched_stop": matched}
            )
            prompt_tokens += len(_token_ids(prompt))
            completion_tokens += len(ids)
        return {
            "id": uuid.uuid4().hex,
            "object": "text_completion",
            "created": int(time.time()),
            "model": body.get("model") or config.served_model_name(),
            "choices": choices,
            "usage": usage(prompt_tokens, completion_tokens),
            "metadata": {"weight_version": "default"},
        }

    # --- embeddings / classification ------------------------------------------------------------------
    def embed(text: str) -> list[float]:
        if config.mode == "reward":
            return [standin_reward(text)]
        return standin_embedding(text, config.dim)

    async def do_v1_embeddings(body: dict[str, Any]) -> dict[str, Any]:
        texts = _texts_of(body.get("input"), "input")
        data = [{"embedding": embed(t), "index": i, "object": "embedding"} for i, t in enumerate(texts)]
        tokens = sum(len(_token_ids(t)) for t in texts)
        return {
            "data": data,
            "model": body.get("model") or config.served_model_name(),
            "object": "list",
            "usage": usage(tokens, 0),
        }

    async def do_v1_classify(body: dict[str, Any]) -> dict[str, Any]:
        texts = _texts_of(body.get("input"), "input")
        # One label: softmax over a single logit is always [1.0], exactly as SGLang reports it.
        data = [{"index": i, "label": "LABEL_0", "probs": [1.0], "num_classes": 1} for i in range(len(texts))]
        tokens = sum(len(_token_ids(t)) for t in texts)
        return {
            "id": f"classify-{uuid.uuid4().hex}",
            "object": "list",
            "created": int(time.time()),
            "model": config.served_model_name(),
            "data": data,
            "usage": usage(tokens, 0),
        }

    async def do_encode(body: dict[str, Any]) -> dict[str, Any] | list[Any]:
        if body.get("text") is not None:
            raw = body["text"]
        elif body.get("input_ids") is not None:
            raw = body["input_ids"]
        else:
            raise _StandinError(400, "Either text or input_ids should be provided.")
        texts = _texts_of(raw, "text")
        outs = []
        for t in texts:
            meta = {
                "id": uuid.uuid4().hex,
                "finish_reason": {"type": "stop", "matched": None},
                "prompt_tokens": len(_token_ids(t)),
                "weight_version": "default",
                "num_retractions": 0,
                "e2e_latency": 0.001,
            }
            outs.append({"embedding": embed(t), "meta_info": meta})
        single = isinstance(raw, str) or (bool(raw) and isinstance(raw[0], int))
        return outs[0] if single else outs

    def score_ids(value: Any, field_name: str) -> list[int]:
        """A query/item as token ids: ids as given; text gets SGLang's special tokens (a BOS, id 1) first."""
        if isinstance(value, str):
            return [1, *_token_ids(value)]
        if isinstance(value, list) and all(isinstance(t, int) for t in value):
            return list(value)
        raise _StandinError(400, f"'{field_name}' must be text or a list of token ids")

    async def do_v1_score(body: dict[str, Any]) -> dict[str, Any]:
        labels = body.get("label_token_ids")
        if not isinstance(labels, list) or not labels or not all(isinstance(t, int) for t in labels):
            raise _StandinError(400, "label_token_ids must be a non-empty list of token ids")
        items = body.get("items")
        items = items if isinstance(items, list) and items and not isinstance(items[0], int) else [items]
        query = score_ids(body.get("query"), "query")
        scores = []
        for item in items:
            prompt = query + score_ids(item, "items")
            digest = hashlib.sha256(json.dumps(prompt).encode()).digest()
            raw = [digest[i % len(digest)] + 1.0 for i in range(len(labels))]
            # A reply in the prompt text picks the first label (a "yes" judge), as /generate does.
            if prompt[:1] == [1] and _REPLY_RE.search(
                bytes(t - 3 for t in prompt[1:] if 3 <= t < 259).decode("utf-8", errors="ignore")
            ):
                raw[0] = 1000.0
            total = sum(raw) if body.get("apply_softmax") else max(sum(raw), 1.0) * 2
            scores.append([r / total for r in raw])
        state.last_body["/v1/score:ids"] = {"prompt_ids": query}
        return {"scores": scores, "model": config.served_model_name(), "usage": None, "object": "scoring"}

    gen_modes: tuple[Mode, ...] = ("judge",)
    emb_modes: tuple[Mode, ...] = ("reward", "encoder")

    @app.api_route("/generate", methods=["POST", "PUT"])
    async def generate(request: Request) -> Response:
        return await serve("/generate", request, do_generate, openai=False, modes=gen_modes)

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await serve("/v1/chat/completions", request, do_chat, openai=True, modes=gen_modes)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await serve("/v1/completions", request, do_completions, openai=True, modes=gen_modes)

    @app.post("/v1/score")
    async def v1_score(request: Request) -> Response:
        return await serve("/v1/score", request, do_v1_score, openai=True, modes=gen_modes)

    @app.post("/v1/embeddings")
    async def v1_embeddings(request: Request) -> Response:
        return await serve("/v1/embeddings", request, do_v1_embeddings, openai=True, modes=emb_modes)

    @app.post("/v1/classify")
    async def v1_classify(request: Request) -> Response:
        return await serve("/v1/classify", request, do_v1_classify, openai=True, modes=("reward",))

    @app.api_route("/classify", methods=["POST", "PUT"])
    async def classify(request: Request) -> Response:
        return await serve("/classify", request, do_encode, openai=False, modes=("reward",))

    @app.api_route("/encode", methods=["POST", "PUT"])
    async def encode(request: Request) -> Response:
        return await serve("/encode", request, do_encode, openai=False, modes=emb_modes)

    # --- observability and fault control ----------------------------------------------------------------
    @app.get("/metrics")
    async def metrics() -> PlainTextResponse:
        name = config.served_model_name()
        lines = [
            "# HELP sglang:num_requests_total The number of processed requests.",
            "# TYPE sglang:num_requests_total counter",
            f'sglang:num_requests_total{{model_name="{name}"}} {state.total_served}',
            "# HELP standin_requests_total Requests served per route by this stand-in replica.",
            "# TYPE standin_requests_total counter",
        ]
        for route in WORK_ROUTES:
            labels = f'replica="{config.replica_id}",route="{route}"'
            lines.append(f"standin_requests_total{{{labels}}} {state.served[route]}")
        return PlainTextResponse("\n".join(lines) + "\n")

    @app.get("/standin/stats")
    async def stats() -> dict[str, Any]:
        return {
            "replica_id": config.replica_id,
            "mode": config.mode,
            "served": dict(state.served),
            "failed": dict(state.failed),
            "abandoned": dict(state.abandoned),
            "total": state.total_served,
            "healthy": state.healthy,
            "last_body": state.last_body,
        }

    @app.post("/standin/control")
    async def control(request: Request) -> dict[str, Any]:
        body = await request.json()
        if "healthy" in body:
            state.healthy = bool(body["healthy"])
        if "fail_rate" in body:
            config.fail_rate = float(body["fail_rate"])
        if "fail_status" in body:
            config.fail_status = int(body["fail_status"])
        if "delay_ms" in body:
            config.delay_ms = float(body["delay_ms"])
        if "canned_text" in body:
            config.canned_text = str(body["canned_text"])
        return await stats()

    return app


async def _client_left_within(request: Request, seconds: float) -> bool:
    """Wait `seconds`, or less if the client disconnects first; True if it did."""

    async def disconnected() -> None:
        # The body has been read, so the next ASGI message is `http.disconnect` when the client goes away.
        while (await request.receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(disconnected(), seconds)
    except TimeoutError:
        return False
    return True


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        raise _StandinError(400, "each message must be an object")
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _sse(items: list[Any], done: bool) -> StreamingResponse:
    async def events() -> AsyncIterator[bytes]:
        for item in items:
            yield b"data: " + json.dumps(item).encode() + b"\n\n"
        if done:
            yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


def parse_args(argv: list[str] | None = None) -> tuple[StandinConfig, str]:
    parser = argparse.ArgumentParser(
        prog="python -m tests.sglang_standin", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=["judge", "reward", "encoder"], default="judge")
    parser.add_argument("--replica-id", default="0")
    parser.add_argument("--canned-text", default=DEFAULT_CANNED_TEXT)
    parser.add_argument("--model-path", default="")
    parser.add_argument("--fail-rate", type=float, default=0.0, help="fraction of work requests that fail")
    parser.add_argument("--fail-status", type=int, default=503)
    parser.add_argument("--startup-delay-s", type=float, default=0.0, help="/health answers 503 until then")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="added latency per work request")
    parser.add_argument("--health-delay-s", type=float, default=1.0, help="/health answers after this long")
    parser.add_argument("--dim", type=int, default=64, help="embedding size in encoder mode")
    parser.add_argument("--seed", type=int, default=0, help="seed of the failure injection")
    args = parser.parse_args(argv)
    if not 0.0 <= args.fail_rate <= 1.0:
        parser.error("--fail-rate must be within [0, 1]")
    config = StandinConfig(
        mode=args.mode,
        replica_id=args.replica_id,
        canned_text=args.canned_text,
        model_path=args.model_path,
        fail_rate=args.fail_rate,
        fail_status=args.fail_status,
        startup_delay_s=args.startup_delay_s,
        delay_ms=args.delay_ms,
        dim=args.dim,
        seed=args.seed,
        port=args.port,
        health_delay_s=args.health_delay_s,
    )
    return config, args.host


def main(argv: list[str] | None = None) -> None:
    config, host = parse_args(argv)
    uvicorn.run(create_app(config), host=host, port=config.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
