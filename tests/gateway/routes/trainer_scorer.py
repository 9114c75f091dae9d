"""The trainer routes mounted on a bare app around a scripted `score_one` (the gateway's contract: a typed
`/score` request in, its typed result out). The live-gateway versions of these checks are in
tests/integrations/test_live_gateway.py and tests/security/test_protocol_limits.py."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from rewardfleet.services.gateway.routes import openrlhf, slime
from rewardfleet.services.gateway.routes.error_handlers import install_error_handlers
from rewardfleet.services.gateway.routes.trainer_protocol import TrainerBackend
from rewardfleet.services.gateway.schemas import ErrorInfo, ScoreRequest, ScoreResult, Status, Timings

IM_PROMPT = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"


class Scorer:
    """Stands in for the gateway's scoring callable: 1.0 if the answer equals the ground truth."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, sample: ScoreRequest) -> ScoreResult:
        self.bodies.append(sample.model_dump(exclude_unset=True))
        answer = sample.solution_str.replace("<|im_end|>", "").strip()

        def result(score: float | None, status: Status, extra: dict[str, Any], error: str = "") -> Any:
            return ScoreResult(
                uid=sample.uid,
                score=score,
                extra=extra,
                reward_fn=sample.reward_fn or "exact",
                data_source=sample.data_source,
                status=status,
                error=ErrorInfo(type=error.split(":")[0], message=error.split(":")[1]) if error else None,
                timings=Timings(compute_s=0.0, total_s=0.0),
            )

        if answer == "boom":
            return result(None, "error", {}, "ValueError:boom")
        if answer == "slow":
            return result(None, "timeout", {}, "timeout:over 1s")
        if answer == "fallback":
            return result(-1.0, "error", {}, "KeyError:x")
        if answer == "steps":  # a function that returned per-step scores (docs/trajectories.md)
            return result(0.5, "ok", {}).model_copy(update={"step_scores": [1.0, 0.0]})
        correct = answer == str(sample.ground_truth)
        return result(float(correct), "ok", {"acc": correct, "pred": answer, "n": 3})


def trainer_app(backend: TrainerBackend) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(openrlhf.make_router(backend))
    app.include_router(slime.make_router(backend))
    return app


def openrlhf_payload(*answers: str, labels: list[Any] | None = None) -> dict[str, Any]:
    """What OpenRLHF posts: decoded prompt+response tokens, the templated prompt, and the label column."""
    return {
        "query": [IM_PROMPT + a + "<|im_end|>" for a in answers],
        "prompts": [IM_PROMPT] * len(answers),
        "labels": labels if labels is not None else ["4"] * len(answers),
    }
