"""Sandbox settings fail naming the field; the start-up check passes here and, where no sandbox can be made,
says so naming the options; a sample is then a typed error and its program never runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardfleet.reward_fns import code
from rewardfleet.reward_fns._sandbox.errors import SandboxUnavailable
from rewardfleet.reward_fns._sandbox.settings import settings_from_kwargs


def test_check_passes_on_this_machine() -> None:
    code.startup_check({})
    code.startup_check({"sandbox": {"slots": 1}, "memory_limit_mb": 256})


def test_check_fails_clearly_and_names_the_options() -> None:
    with pytest.raises(SandboxUnavailable) as raised:
        code.startup_check({"sandbox": {"python": "/nonexistent/bin/python3"}})
    message = str(raised.value)
    assert "not run unsandboxed" in message
    assert "sandbox_fusion_url" in message and "CAP_SYS_ADMIN" in message and "seccomp" in message


async def test_without_a_sandbox_the_sample_is_a_typed_error_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    program = f"open({str(marker)!r}, 'w').write('x')\\nprint(1)"
    with pytest.raises(SandboxUnavailable):
        await code.compute_score(
            data_source="apps",
            solution_str=program,
            ground_truth={"inputs": ["1"], "outputs": ["1"]},
            sandbox={"python": "/nonexistent/bin/python3"},
        )
    assert not marker.exists()


@pytest.mark.parametrize(
    ("sandbox", "named"),
    [
        ({"slots": 0}, "sandbox.slots"),
        ({"case_timeout_s": -1}, "sandbox.case_timeout_s"),
        ({"backend": "docker"}, "sandbox.backend"),
        ({"backend": "sandbox_fusion"}, "sandbox_fusion_url"),
        ({"unknown_knob": 1}, "sandbox.unknown_knob"),
    ],
)
def test_bad_settings_name_the_field(sandbox: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        settings_from_kwargs(sandbox, None, None)


@pytest.mark.parametrize(
    "truth",
    [
        "not json",
        {"inputs": "1", "outputs": ["1"]},
        {"inputs": ["1", "2"], "outputs": ["1"]},
        7,
        {"outputs": []},
    ],
)
async def test_malformed_test_cases_are_a_value_error(truth: object) -> None:
    with pytest.raises(ValueError, match="ground_truth"):
        await code.compute_score(data_source="apps", solution_str="print(1)", ground_truth=truth)


def test_an_interpreter_at_the_root_is_refused_not_bound() -> None:
    # Its prefix would be "/": binding that would show the sandbox the whole host.
    with pytest.raises(SandboxUnavailable, match="below a prefix"):
        code.startup_check({"sandbox": {"python": "/python3"}})
