"""The stand-in's own routes: SGLang-style `/metrics`, per-route counts, and fault control at run time."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

from tests.sglang_standin.state import WORK_ROUTES, StateDep

router = APIRouter()


@router.get("/metrics")
async def metrics(state: StateDep) -> PlainTextResponse:
    config = state.config
    lines = [
        "# HELP sglang:num_requests_total The number of processed requests.",
        "# TYPE sglang:num_requests_total counter",
        f'sglang:num_requests_total{{model_name="{config.served_model_name()}"}} {state.total_served}',
        "# HELP standin_requests_total Requests served per route by this stand-in replica.",
        "# TYPE standin_requests_total counter",
    ]
    for route in WORK_ROUTES:
        labels = f'replica="{config.replica_id}",route="{route}"'
        lines.append(f"standin_requests_total{{{labels}}} {state.served[route]}")
    return PlainTextResponse("\n".join(lines) + "\n")


@router.get("/standin/stats")
async def stats(state: StateDep) -> dict[str, Any]:
    return state.stats()


@router.post("/standin/control")
async def control(request: Request, state: StateDep) -> dict[str, Any]:
    body = await request.json()
    config = state.config
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
    return state.stats()
