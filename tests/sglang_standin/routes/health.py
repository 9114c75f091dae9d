"""Registration, health and information routes: what sglang-router and the fleet probe."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, Response

from tests.sglang_standin.state import StandinState, StateDep

router = APIRouter()


@router.get("/ready")
async def ready(state: StateDep) -> Response:
    return Response(status_code=200 if state.ready() else 503)


@router.get("/health")
@router.get("/health_generate")
async def health(state: StateDep) -> Response:
    # SGLang's /health sends a one-token generation, sleeps 1 s, then checks that the scheduler answered.
    if not state.ready():
        return Response(status_code=503)
    await asyncio.sleep(state.config.health_delay_s)  # SGLang's own pause (the protocol), not a wait
    return Response(status_code=200 if state.ready() else 503)


def _model_info(state: StandinState) -> dict[str, Any]:
    config = state.config
    arch = {"judge": "Qwen2ForCausalLM", "reward": "Qwen2ForRewardModel", "encoder": "BertModel"}[config.mode]
    return {
        "model_path": config.served_model_name(),
        "served_model_name": config.served_model_name(),
        "tokenizer_path": config.served_model_name(),
        "is_generation": config.mode == "judge",
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


@router.get("/model_info")
@router.get("/get_model_info")
async def model_info(state: StateDep) -> dict[str, Any]:
    return _model_info(state)


@router.get("/server_info")
@router.get("/get_server_info")
async def server_info(state: StateDep) -> dict[str, Any]:
    config = state.config
    return {
        "model_path": config.served_model_name(),
        "tokenizer_path": config.served_model_name(),
        "served_model_name": config.served_model_name(),
        "is_embedding": config.mode != "judge",
        "host": "127.0.0.1",
        "port": config.port,
        "tp_size": 1,
        "dp_size": 1,
        "pp_size": 1,
        "max_total_num_tokens": 32768,  # from the scheduler info, not a server arg
        "internal_states": [{"last_gen_throughput": 0.0}],
        "version": "0.0.0-standin",
    }


@router.get("/v1/models")
async def models(state: StateDep) -> dict[str, Any]:
    name = state.config.served_model_name()
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
