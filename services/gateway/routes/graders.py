"""`POST /graders/validate` and `POST /graders/run`: try a declarative grader before a training run."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from services.gateway.config import format_validation_error
from services.gateway.config.graders import GraderSpec
from services.gateway.features.graders.runtime import GraderError
from services.gateway.routes.deps import Gateway, GatewayDep
from services.gateway.schemas import ScoreRequest

router = APIRouter(tags=["graders"])
_SPEC = TypeAdapter(GraderSpec)


class GraderBody(BaseModel):
    grader: dict[str, Any] | str = Field(description="A grader spec, or the name of a configured grader.")


class RunBody(GraderBody):
    sample: ScoreRequest


class Validation(BaseModel):
    valid: bool
    errors: list[str]


def _spec(gateway: Gateway, grader: dict[str, Any] | str) -> tuple[Any, list[str]]:
    features = gateway.features
    if features is None:
        raise RuntimeError("the gateway is not started")
    if isinstance(grader, str):
        if grader not in features.graders.graders:
            return None, [f"no configured grader named {grader!r} ({sorted(features.graders.graders)})"]
        spec = features.graders.graders[grader]
    else:
        try:
            spec = _SPEC.validate_python(grader)
        except ValidationError as exc:
            return None, format_validation_error(exc).splitlines()
    return spec, features.graders.problems(spec)


@router.post("/graders/validate", response_model=Validation)
async def validate(body: GraderBody, gateway: GatewayDep) -> Validation:
    """Check a grader spec the way start-up does; never runs it."""
    _, errors = _spec(gateway, body.grader)
    return Validation(valid=not errors, errors=errors)


@router.post("/graders/run")
async def run(body: RunBody, gateway: GatewayDep) -> dict[str, Any]:
    """Grade one sample: `{"valid", "errors", "score", "extra", "status", "error"}`. A call that fails is a
    200 with `status: "error"`, an invalid spec a 200 with `valid: false`."""
    spec, errors = _spec(gateway, body.grader)
    if errors:
        return {
            "valid": False,
            "errors": errors,
            "score": None,
            "extra": {},
            "status": "invalid",
            "error": None,
        }
    assert gateway.features is not None
    try:
        score, extra = await gateway.features.graders.run(spec, body.sample)
    except (GraderError, Exception) as exc:
        error = {"type": type(exc).__name__, "message": str(exc)}
        return {"valid": True, "errors": [], "score": None, "extra": {}, "status": "error", "error": error}
    return {"valid": True, "errors": [], "score": score, "extra": extra, "status": "ok", "error": None}
