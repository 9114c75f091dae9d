"""`POST /graders/validate` and `POST /graders/run`: try a declarative grader before a training run.

A request may send an inline spec of the declarative kinds (`string_check`, `text_similarity`,
`score_model`, `multi` of those) or name any grader of the `graders:` config, python graders included. An
inline spec that names code (a `python` grader, a `path`, at any depth) is a 403 naming the field: a request
never makes the gateway import a module or read a file.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from rewardfleet.services.gateway.config import format_validation_error
from rewardfleet.services.gateway.errors import InlineCodeRefused
from rewardfleet.services.gateway.execution.contain import UserCodeExit
from rewardfleet.services.gateway.graders.config import GraderSpec, code_fields
from rewardfleet.services.gateway.graders.runtime import GraderRuntime
from rewardfleet.services.gateway.pools.external_pools import redact_token
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
    """The spec and its problems. An inline spec that names code is refused before anything looks at what
    it names: the answer is the same whether that module or file exists."""
    if isinstance(grader, str):
        if grader not in runtime.graders:
            return None, [f"no configured grader named {grader!r} ({sorted(runtime.graders)})"]
        spec = runtime.graders[grader]
    else:
        named = code_fields(grader)
        if named:
            raise InlineCodeRefused(
                f"{', '.join(named)}: an inline grader may not name code, a module or a file (python "
                "graders run only where the operator configured them); name a grader of the `graders:` "
                "config instead",
                field=named[0],
                fields=named,
            )
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
        error = {
            "type": exc.type if isinstance(exc, UserCodeExit) else type(exc).__name__,
            "message": redact_token(str(exc), gateway.scorer.injectables.pool_token),
        }
        return {"valid": True, "errors": [], "score": None, "extra": {}, "status": "error", "error": error}
    return {"valid": True, "errors": [], "score": score, "extra": extra, "status": "ok", "error": None}
