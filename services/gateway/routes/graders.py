"""`POST /graders/validate` and `POST /graders/run`: try a declarative grader before a training run."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from rewardfleet.services.gateway.config import format_validation_error
from rewardfleet.services.gateway.config.graders import GraderSpec
from rewardfleet.services.gateway.features.graders.runtime import GraderRuntime
from rewardfleet.services.gateway.routes.deps import GatewayDep
from rewardfleet.services.gateway.schemas import ScoreRequest

router = APIRouter(tags=["graders"])
_SPEC = TypeAdapter(GraderSpec)


class GraderBody(BaseModel):
    grader: dict[str, Any] | str = Field(description="A grader spec, or the name of a configured grader.")


class RunBody(GraderBody):
    sample: ScoreRequest


class Validation(BaseModel):
    valid: bool
    errors: list[str]


def _spec(runtime: GraderRuntime, grader: dict[str, Any] | str) -> tuple[GraderSpec | None, list[str]]:
    if isinstance(grader, str):
        if grader not in runtime.graders:
            return None, [f"no configured grader named {grader!r} ({sorted(runtime.graders)})"]
        spec = runtime.graders[grader]
    else:
        try:
            spec = _SPEC.validate_python(grader)
        except ValidationError as exc:
            return None, format_validation_error(exc).splitlines()
    return spec, runtime.problems(spec)


@router.post("/graders/validate", response_model=Validation)
async def validate(body: GraderBody, gateway: GatewayDep) -> Validation:
    """Check a grader spec the way start-up does; never runs it."""
    gateway.limits.check_grader_spec(body.grader)
    _, errors = _spec(gateway.catalog.graders, body.grader)
    return Validation(valid=not errors, errors=errors)


@router.post("/graders/run")
async def run(body: RunBody, gateway: GatewayDep) -> dict[str, Any]:
    """Grade one sample: `{"valid", "errors", "score", "extra", "status", "error"}`. A call that fails is a
    200 with `status: "error"`, an invalid spec a 200 with `valid: false`."""
    gateway.limits.check_grader_spec(body.grader)
    gateway.limits.check(body.sample)
    runtime = gateway.catalog.graders
    spec, errors = _spec(runtime, body.grader)
    if spec is None or errors:
        return {
            "valid": False,
            "errors": errors,
            "score": None,
            "extra": {},
            "status": "invalid",
            "error": None,
        }
    try:
        score, extra = await runtime.run(spec, body.sample)
    except Exception as exc:  # GraderError, a model pool's RemoteCallError, a python grader's own error
        error = {"type": type(exc).__name__, "message": str(exc)}
        return {"valid": True, "errors": [], "score": None, "extra": {}, "status": "error", "error": error}
    return {"valid": True, "errors": [], "score": score, "extra": extra, "status": "ok", "error": None}
