"""`GraderRuntime` in-process: the time limit of a grader's call (a `multi` grader's is its graders'), and
the version of a python grader following its file."""

from __future__ import annotations

from pathlib import Path

from pydantic import TypeAdapter

from rewardfleet.services.gateway.catalog.build import GRADER_TIMEOUT_MARGIN_S, grader_function
from rewardfleet.services.gateway.graders.config import GraderSpec
from rewardfleet.services.gateway.graders.runtime import GraderRuntime

SPEC: TypeAdapter[GraderSpec] = TypeAdapter(GraderSpec)


def runtime(**graders: dict[str, object]) -> GraderRuntime:
    return GraderRuntime({n: SPEC.validate_python(g) for n, g in graders.items()}, {}, "127.0.0.1:9", None)


def test_multi_grader_limit_is_the_longest_of_its_graders() -> None:
    rt = runtime(
        judge={"type": "score_model", "timeout_s": 200}, exact={"type": "string_check", "operation": "eq"}
    )
    multi = SPEC.validate_python(
        {
            "type": "multi",
            "graders": {
                "j": "judge",
                "e": "exact",
                "s": {"type": "text_similarity", "evaluation_metric": "bleu"},
            },
            "calculate_output": "j + e + s",
        }
    )
    assert rt.timeout_s(multi) == 200.0  # was a fixed 300 s whatever the graders said
    fn = grader_function("overall", multi, rt)
    assert fn.config.timeout_s == 200.0 + GRADER_TIMEOUT_MARGIN_S


def test_python_grader_version_follows_its_file(tmp_path: Path) -> None:
    file = tmp_path / "grade.py"
    file.write_text("def grade(sample, item):\n    return 1.0\n")
    spec = SPEC.validate_python({"type": "python", "path": f"{file}:grade"})
    before = grader_function("g", spec, runtime()).version
    file.write_text("def grade(sample, item):\n    return 0.5\n")
    assert grader_function("g", spec, runtime()).version != before
