"""A real gateway on 127.0.0.1 standing in for NeMo Gym resources servers (mcqa also on a port of its own)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.processes import free_port
from tests.support.gateway import Gateway, start_gateway

REWARD_FILES = Path(__file__).parent / "reward_files"
SERVERS = {
    "mcqa": {
        "reward_fn": "mcqa",
        "ground_truth": "expected_answer",
        "extra_info": ["options", "grading_mode", "template_metadata"],
        "answer_field": "extracted_answer",
    },
    "equivalence_rule": {
        "reward_fn": "equivalence_rule",
        "ground_truth": "expected_answer",
        "extra_info": [],
    },
    "format_verification": {"reward_fn": "format_verification", "ground_truth": "verifier", "extra_info": []},
    "structured_outputs": {
        "reward_fn": "json_schema",
        "ground_truth": "schema_str",
        "extra_info": ["schema_type", "response_mode", "tool_name", "tool_payload_key"],
        "response": "messages",
    },
    "math_with_judge": {
        "reward_fn": "math_verify",
        "ground_truth": "expected_answer",
        "extra_info": [],
        # LibraryJudgeMathVerifyResponse's fields, from math_verify's extras
        "answer_fields": {"extracted_answer": "pred", "library_reward": "reward", "judge_evaluations": None},
    },
    # instruction following reads instruction_id_list and kwargs (and ifbench its grading_mode) from the task
    "instruction_following": {
        "reward_fn": "instruction_following",
        "extra_info": ["instruction_id_list", "kwargs", "prompt"],
    },
    "ifbench": {
        "reward_fn": "instruction_following",
        "extra_info": ["instruction_id_list", "kwargs", "prompt", "grading_mode"],
    },
    "sync_components": {"reward_fn": "components_sync", "extra_info": ["components"]},
    "multi": {"reward_fn": "multi", "ground_truth": "expected_answer", "extra_info": []},
    "fallback": {"reward_fn": "format_verification", "ground_truth": "verifier", "error_score": -1.0},
}


@pytest.fixture(scope="package")
def mcqa_port() -> int:
    return free_port()


@pytest.fixture(scope="package")
def gym(tmp_path_factory: pytest.TempPathFactory, mcqa_port: int) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("nemo_gym")
    servers = {name: dict(spec) for name, spec in SERVERS.items()}
    servers["mcqa"]["port"] = mcqa_port
    config = {
        "workers": 2,
        "max_body_bytes": 4 * 1024 * 1024,
        "nemo_gym": {"servers": servers},
        # hostile regexes and schemas are stopped by the timeout: short here so the tests stay quick
        "functions": {
            **{name: {"timeout_s": 3.0} for name in ("mcqa", "json_schema", "format_verification")},
            # math-verify's own timer (5 s) is short on a busy 2-core machine; the recorded answers are long
            "math_verify": {
                "timeout_s": 120.0,
                "reward_kwargs": {"parsing_timeout_s": 60, "verify_timeout_s": 60},
            },
        },
        "composites": {
            "multi": {
                "components": [{"fn": "exact_match", "weight": 1.0}, {"fn": "format_check", "weight": 0.5}]
            }
        },
    }
    gateway = start_gateway(tmp, config, REWARD_FILES)
    try:
        yield gateway
    finally:
        gateway.proc.stop()
