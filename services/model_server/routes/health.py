"""Registration, health and information routes: what sglang-router and Prometheus probe."""

from __future__ import annotations

import asyncio
import os
import time
from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from rewardfleet.services.model_server.deps import ServerDep
from rewardfleet.services.model_server.errors import ModelServerError
from rewardfleet.services.model_server.metrics import CONTENT_TYPE
from rewardfleet.services.model_server.runners.common import TextInput
from rewardfleet.services.model_server.runners.generation import GenerationInput, SamplingParams
from rewardfleet.services.model_server.runners.prm import StepInput

router = APIRouter()

HEALTH_GENERATE_TIMEOUT_S = 20.0


def _version() -> str:
    try:
        return version("reward-fleet")
    except PackageNotFoundError:
        return "0.0.0"


def _accepting(server: ServerDep) -> bool:
    return server.ready and server.engine_alive and all(b.running for b in server.batchers.values())


@router.get("/ready")
async def ready(server: ServerDep) -> Response:
    """Readiness, as SGLang 0.5.23's `/ready`: 200 once loaded and warmed up, 503 before (no model work)."""
    return Response(status_code=200 if _accepting(server) else 503)


@router.get("/health")
async def health(server: ServerDep) -> Response:
    """Liveness for the router and orchestrators: 200 once warmed up and every batcher loop is alive.

    Cheaper than SGLang's `/health` (which runs a one-token generation and waits >= 1 s); the deep check is
    `/health_generate`."""
    return Response(status_code=200 if _accepting(server) else 503)


@router.get("/health_generate")
async def health_generate(server: ServerDep) -> Response:
    """Deep check: push one tiny request through the model's batcher (as SGLang does)."""
    if not server.ready or server.runner is None:
        return Response(status_code=503)
    probe = TextInput(input_ids=[0])
    op: str
    item: object
    if server.runner.is_generation:
        op, item = "generate", GenerationInput(probe, SamplingParams(max_new_tokens=1, temperature=0.0))
    elif server.runner.kind == "prm":
        op, item = "steps", StepInput(input_ids=[0])
    else:
        op, item = server.pooling_op, probe
    try:
        await asyncio.wait_for(server.run_one(op, item), HEALTH_GENERATE_TIMEOUT_S)
    except (TimeoutError, ModelServerError):
        return Response(status_code=503)
    return Response(status_code=200)


@router.get("/get_model_info")
@router.get("/model_info")
async def model_info(server: ServerDep) -> JSONResponse:
    """Every key SGLang 0.5.23's `/model_info` has (tests/sglang_conformance checks it against the source)."""
    runner = server.require_runner()
    s = server.settings
    return JSONResponse(
        {
            "model_path": str(s.model_path),
            "served_model_name": s.model_name,
            "tokenizer_path": str(s.tokenizer_path or s.model_path),
            "is_generation": runner.is_generation,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": "auto",
            "reasoning_parser": None,
            "tool_call_parser": None,
            "disaggregation_mode": "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": runner.model_type,
            "architectures": runner.architectures,
        }
    )


@router.get("/get_server_info")
@router.get("/server_info")
async def server_info(server: ServerDep) -> JSONResponse:
    """Server args under SGLang's own names, plus our batching settings in one `rewardfleet` block."""
    s = server.settings
    runner = server.runner
    return JSONResponse(
        {
            "model_path": str(s.model_path),
            "tokenizer_path": str(s.tokenizer_path or s.model_path),
            "served_model_name": s.model_name,
            "host": s.host,
            "port": s.port,
            "is_embedding": runner is not None and not runner.is_generation,
            "context_length": runner.context_length if runner is not None else s.context_length,
            "tp_size": 1,
            "dp_size": 1,
            "dtype": s.dtype,
            "enable_deterministic_inference": s.deterministic,
            "internal_states": [server.load()],
            "version": _version(),
            "rewardfleet": {
                "backend": "cpu",
                "model_kind": runner.kind if runner is not None else None,
                # the process holding the model: an engine process, or this one (engine.py)
                "engine_pid": server.engine.pid if server.engine is not None else os.getpid(),
                "max_batch_size": s.max_batch_size,
                "batch_wait_timeout_s": s.batch_wait_timeout_s,
                "max_queue": s.max_queue,
                "status": "ready" if server.ready else "starting",
                "uptime_s": time.time() - server.started_at,
            },
        }
    )


def _model_card(server: ServerDep) -> dict[str, object]:
    name = server.settings.model_name
    return {
        "id": name,
        "object": "model",
        "created": int(server.started_at),
        "owned_by": "rewardfleet",
        "root": name,
        "parent": None,
        "max_model_len": server.runner.context_length if server.runner is not None else None,
    }


@router.get("/v1/models")
async def list_models(server: ServerDep) -> JSONResponse:
    return JSONResponse({"object": "list", "data": [_model_card(server)]})


@router.get("/v1/models/{model:path}")
async def retrieve_model(model: str, server: ServerDep) -> JSONResponse:
    if model != server.settings.model_name:
        return JSONResponse(
            {
                "error": {
                    "message": f"The model '{model}' does not exist",
                    "type": "invalid_request_error",
                    "param": "model",
                    "code": "model_not_found",
                }
            },
            status_code=404,
        )
    return JSONResponse(_model_card(server))


@router.get("/get_load")
async def get_load(server: ServerDep) -> JSONResponse:
    """What sglang-router's power_of_two policy polls: a list with one entry per DP rank (here one)."""
    return JSONResponse([server.load()])


@router.get("/metrics")
async def metrics(request: Request, server: ServerDep) -> Response:
    return Response(server.metrics.render(), media_type=CONTENT_TYPE)
