"""vLLM 0.33.0's own pooling protocol behind HTTP on 127.0.0.1, for the conformance tests.

Run in a child interpreter whose PYTHONPATH holds the vLLM wheel (`.venv/vllm-0.33.0`, see .ci/setup and
tests/vllm_conformance/conftest.py): `python -m tests.vllm_conformance.vllm_standin --port P`. vllm must stay
unimportable in the test workers themselves (verl and others change behaviour when `import vllm` works).

Nothing here re-implements vLLM's protocol. Bodies are validated by its `PoolingRequest` the way its
`POST /pooling` route declares it (`create_pooling(request: PoolingRequest, raw_request)` in
`vllm/entrypoints/pooling/pooling/api_router.py`, which itself does not import without xgrammar); faults are
answered by vLLM's own handlers (`validation_exception_handler`, `create_error_response`); answers are built
from its `PoolingResponse` / `PoolingResponseData` / `UsageInfo` as `ServingPooling` builds them. What cannot
run is the model: `/pooling` gives each input one row `[1 - p, p]` per step tag in its text, with
`p = 1 / (k + 2)` for the k-th tag (a stand-in STEP pooler), and counts characters as prompt tokens.

Routes:
    POST /pooling          vLLM's PoolingRequest -> a PoolingResponse, or vLLM's own 400 body
    POST /parse            the same validation -> {"class", "request"}: which class took the body, its dump
    POST /check/response   a PoolingResponse from elsewhere -> {"rebuilt"}: vLLM's validation of it, rebuilt
                           as ServingPooling would answer those values (422 with the errors if invalid)
    POST /check/error      an error body from elsewhere -> vLLM's ErrorResponse validation of it
    GET  /facts            version, request fields and defaults, tasks, STEP pooler facts
    GET  /ready            200
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_args

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from vllm import PoolingParams
from vllm.config.pooler import PoolerConfig, TokenPoolingType
from vllm.entrypoints.pooling.pooling.protocol import (
    PoolingChatRequest,
    PoolingCompletionRequest,
    PoolingRequest,
    PoolingResponse,
    PoolingResponseData,
)
from vllm.entrypoints.serve.engine.protocol import ErrorResponse, UsageInfo
from vllm.entrypoints.serve.exception_handling.handlers.exception import exception_handler
from vllm.entrypoints.serve.exception_handling.handlers.validation import validation_exception_handler
from vllm.exceptions import VLLMError
from vllm.model_executor.models import config as models_config
from vllm.tasks import POOLING_TASKS

REQUEST_CLASSES = (PoolingCompletionRequest, PoolingChatRequest)


def _texts(request: Any) -> list[str]:
    """The text of each input: the completion's strings (token ids have none here), or the chat's contents."""
    if isinstance(request, PoolingChatRequest):
        return ["".join(str(m.get("content") or "") for m in request.messages)]
    value = request.input
    if isinstance(value, str):
        return [value]
    if value and isinstance(value[0], str):
        return [str(v) for v in value]
    return ["" for _ in value] if value and isinstance(value[0], list) else [""]


def _default(field: Any) -> Any:
    if field.is_required():
        return "<required>"
    if field.default_factory is not None:
        return "<factory>"
    return field.default


def _prm_step_tag_ids() -> dict[str, int | None]:
    """Each process reward model architecture vLLM registers, with the `step_tag_id` its config hook sets on
    a pooler config left at the defaults (`MODELS_CONFIG_MAP` in `model_executor/models/config.py`)."""
    registry = Path(models_config.__file__).with_name("registry.py").read_text()
    out: dict[str, int | None] = {}
    for arch in sorted(set(re.findall(r'"(\w+ForProcessRewardModel)"', registry))):
        model_config = SimpleNamespace(pooler_config=PoolerConfig())
        hook = models_config.MODELS_CONFIG_MAP.get(arch)
        if hook is not None:
            hook.verify_and_update_model_config(model_config)
        out[arch] = model_config.pooler_config.step_tag_id
    return out


def _default_use_activation() -> bool | None:
    """`use_activation` of a `token_classify` request that leaves it unset, once vLLM's `PoolingParams.verify`
    has filled in the defaults for a Qwen2 PRM's pooler config."""
    model_config = SimpleNamespace(pooler_config=PoolerConfig())
    models_config.MODELS_CONFIG_MAP["Qwen2ForProcessRewardModel"].verify_and_update_model_config(model_config)
    params = PoolingParams(task="token_classify")
    params.verify(model_config)
    return params.use_activation


def facts() -> dict[str, Any]:
    return {
        "version": importlib.metadata.version("vllm"),
        "requests": {
            cls.__name__: {name: _default(f) for name, f in cls.model_fields.items()}
            for cls in REQUEST_CLASSES
        },
        "pooling_tasks": list(POOLING_TASKS),
        "pooler_config_fields": [f.name for f in dataclasses.fields(PoolerConfig)],
        "token_pooling_types": list(get_args(TokenPoolingType)),
        "prm_step_tag_ids": _prm_step_tag_ids(),
        "token_classify_default_use_activation": _default_use_activation(),
    }


def build_app(served_model_name: str, step_tag: str) -> FastAPI:
    app = FastAPI()
    # vLLM's handlers read `app.state.args.log_error_stack` (its CLI args).
    app.state.args = SimpleNamespace(log_error_stack=False)
    app.exception_handler(RequestValidationError)(validation_exception_handler)
    app.exception_handler(VLLMError)(exception_handler)

    @app.post("/pooling")
    async def pooling(request: PoolingRequest, raw_request: Request) -> JSONResponse:
        texts = _texts(request)
        items = [
            PoolingResponseData(
                index=i, data=[[1 - 1 / (k + 2), 1 / (k + 2)] for k in range(text.count(step_tag))]
            )
            for i, text in enumerate(texts)
        ]
        base_id = raw_request.headers.get("X-Request-Id") or request.request_id
        tokens = sum(len(t) for t in texts)
        response = PoolingResponse(
            id=f"pooling-{base_id}",
            model=served_model_name,
            data=items,
            usage=UsageInfo(prompt_tokens=tokens, total_tokens=tokens),
        )
        return JSONResponse(response.model_dump())

    @app.post("/parse")
    async def parse(request: PoolingRequest) -> dict[str, Any]:
        return {"class": type(request).__name__, "request": request.model_dump(mode="json")}

    @app.post("/check/response")
    async def check_response(raw_request: Request) -> JSONResponse:
        try:
            got = PoolingResponse.model_validate(await raw_request.json())
        except ValidationError as exc:
            return JSONResponse({"errors": json.loads(exc.json())}, status_code=422)
        rebuilt = PoolingResponse(
            id=got.id,
            created=got.created,
            model=got.model,
            data=[PoolingResponseData(index=d.index, data=d.data) for d in got.data],
            usage=UsageInfo(prompt_tokens=got.usage.prompt_tokens, total_tokens=got.usage.total_tokens),
        )
        return JSONResponse({"rebuilt": rebuilt.model_dump()})

    @app.post("/check/error")
    async def check_error(raw_request: Request) -> JSONResponse:
        try:
            got = ErrorResponse.model_validate(await raw_request.json())
        except ValidationError as exc:
            return JSONResponse({"errors": json.loads(exc.json())}, status_code=422)
        return JSONResponse({"error": got.model_dump()})

    @app.get("/facts")
    async def get_facts() -> dict[str, Any]:
        return facts()

    @app.get("/ready")
    async def ready() -> dict[str, str]:
        return {"status": "ok"}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--served-model-name", default="vllm-standin")
    parser.add_argument("--step-tag", default="<extra_0>")
    args = parser.parse_args()
    uvicorn.run(build_app(args.served_model_name, args.step_tag), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
