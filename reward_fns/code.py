"""Code: run the completion's program on apps-style test cases in a sandbox, scored as verl's prime_code.

verl 0.9.1's `default_compute_score` scores `codecontests`, `apps`, `codeforces` and `taco` with prime_code
(`continuous=True`), or with Sandbox Fusion when `sandbox_fusion_url` is set. This function keeps
prime_code's semantics on both of our backends, so a sample gets the same score wherever it runs:

- the program is the text after the last "```python" up to the next "```" (the whole completion when
  there is no such block);
- `ground_truth` holds the test cases, `{"inputs": [...], "outputs": [...], "fn_name"?: str}` as a dict or a
  JSON string; with `fn_name` the program is call-based, else it reads stdin and prints;
- first pass: every case in order in one process; all pass → 1.0. Otherwise (`continuous=True`, verl's
  default) the score is the fraction of the first 10 cases that pass when each runs alone in a fresh process
  (as a stdin program, as prime_code does). Pass/fail per case:
  `rewardfleet.reward_fns._sandbox.apps_compare`.

The program runs in a sandbox, never in the gateway's process or with its privileges: `sandbox.backend`
is `bubblewrap` (local, the default) or `sandbox_fusion` (chosen automatically when `sandbox_fusion_url` is
set). Settings: `reward_kwargs: {sandbox: {...}}` (see `rewardfleet.reward_fns._sandbox.settings`); `slots`
bounds the sandboxes running at once in this gateway process. Returns `{"score", "all_passed", "verdicts"}`:
`verdicts` are the per-case outcomes of the pass that decided the score (`pass`, `wrong_answer`, `error`,
`timeout`, `compile_error`, `crashed`, `output_limit`). A sample whose sandbox could not judge it raises
a `rewardfleet.reward_fns._sandbox.errors.SandboxError` subclass (a typed error, never a silent 0).

On invalid input it deviates from verl (docs/architecture.md, "Notes moved from module docstrings").
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Protocol

import aiohttp

from rewardfleet.reward_fns._sandbox.apps_compare import case_passes
from rewardfleet.reward_fns._sandbox.bubblewrap import BubblewrapRun, check_bubblewrap
from rewardfleet.reward_fns._sandbox.errors import SandboxNotStarted, SandboxTimeout
from rewardfleet.reward_fns._sandbox.fusion import FusionRun
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings, settings_from_kwargs
from rewardfleet.reward_fns._sandbox.slots import pool_for
from rewardfleet.reward_fns._sandbox.zygote_run import ZygoteRun, check_zygote

DATA_SOURCES: tuple[str, ...] = ("codecontests", "apps", "codeforces", "taco")
# Past sample_timeout_s the running case is killed (a verdict); this much more and the sample is an error.
_KILL_GRACE_S = 10.0
# A case with less of the sample's time left than this is not started (a sandbox needs ~0.1-0.5 s to start).
_MIN_CASE_S = 0.5


class _Run(Protocol):
    async def run_case(self, job: dict[str, Any], call_based: bool, deadline_s: float) -> dict[str, Any]: ...
    async def close(self) -> None: ...


def extract_program(completion: str) -> str:
    """The last ```python block's text (to its closing fence), or the whole completion."""
    return completion.split("```python")[-1].split("```")[0]


def parse_test_cases(ground_truth: Any) -> dict[str, Any]:
    cases = ground_truth
    if isinstance(cases, str | bytes):
        try:
            cases = json.loads(cases)
        except ValueError as exc:
            raise ValueError(f"ground_truth is not JSON test cases: {exc}") from None
    if not isinstance(cases, dict):
        raise ValueError(
            f"ground_truth must be test cases {{inputs, outputs, fn_name?}}, got {type(cases).__name__}"
        )
    inputs, outputs = cases.get("inputs"), cases.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise ValueError("ground_truth test cases need 'inputs' and 'outputs' lists")
    if len(outputs) < len(inputs):
        raise ValueError(f"ground_truth has {len(inputs)} inputs but only {len(outputs)} outputs")
    fn_name = cases.get("fn_name")
    if fn_name is not None and not isinstance(fn_name, str):
        raise ValueError(f"ground_truth fn_name must be a string, got {type(fn_name).__name__}")
    return cases


def startup_check(reward_kwargs: dict[str, Any]) -> str:
    """Start-up check for a `code` function configured with these reward_kwargs: raises SandboxUnavailable
    (naming the missing setting and the options) when its backend cannot run programs here; else says what
    works. Sandbox Fusion is checked per call."""
    settings = settings_from_kwargs(
        reward_kwargs.get("sandbox"),
        reward_kwargs.get("sandbox_fusion_url"),
        reward_kwargs.get("memory_limit_mb"),
    )
    if settings.chosen_backend == "sandbox_fusion":
        return f"sandbox backend: Sandbox Fusion at {settings.sandbox_fusion_url} (checked per call)"
    check_bubblewrap(settings)
    if settings.warm:
        check_zygote(settings)
        return "sandbox backend: bubblewrap, warm (a trial case ran in a zygote's fresh namespaces)"
    return "sandbox backend: bubblewrap, a trial sandbox ran (user, pid, net, IPC, UTS, cgroup namespaces)"


def _verdict(result: dict[str, Any], expected: Any, call_based: bool) -> str:
    verdict = str(result.get("verdict"))
    if verdict != "ok" or result.get("case") == -1:  # -1: no cases, the program loaded
        return verdict
    return "pass" if case_passes(result, expected, call_based) else "wrong_answer"


def _start(settings: SandboxSettings, slot: int, http_client: aiohttp.ClientSession | None) -> _Run:
    if settings.chosen_backend == "sandbox_fusion":
        return FusionRun(settings, http_client)
    return ZygoteRun(settings, slot) if settings.warm else BubblewrapRun(settings, slot)


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    sandbox: dict[str, Any] | None = None,
    sandbox_fusion_url: str | None = None,
    memory_limit_mb: int | None = None,
    continuous: bool = True,
    http_client: aiohttp.ClientSession | None = None,
) -> dict[str, Any]:
    """`{"score": 1.0 | pass fraction, "all_passed": bool, "verdicts": [...]}` as described above."""
    if not isinstance(solution_str, str):
        raise TypeError(f"solution_str must be a string, got {type(solution_str).__name__}")
    settings = settings_from_kwargs(sandbox, sandbox_fusion_url, memory_limit_mb)
    cases = parse_test_cases(ground_truth)
    inputs, outputs = cases["inputs"], cases["outputs"]
    job = {
        "solution": extract_program(solution_str),
        "fn_name": cases.get("fn_name"),
        "inputs": inputs,
        "case_timeout_s": settings.case_timeout_s,
        "retry_case_timeout_s": settings.retry_case_timeout_s,
        "each_cases": settings.retry_cases,
    }
    async with pool_for(settings.chosen_backend, settings.slots).hold() as slot:
        run = _start(settings, slot, http_client)
        try:
            # judge() keeps every case inside sample_timeout_s; this catches only a sandbox that will not die.
            async with asyncio.timeout(settings.sample_timeout_s + _KILL_GRACE_S):
                return await judge(run, job, outputs, continuous, settings.sample_timeout_s)
        except TimeoutError:
            raise SandboxTimeout(
                f"the sample did not finish within sample_timeout_s={settings.sample_timeout_s} "
                f"(+{_KILL_GRACE_S} s to kill it); its sandbox was killed"
            ) from None
        finally:
            await run.close()


async def _run_cases(
    run: _Run,
    job: dict[str, Any],
    indices: list[int],
    fn_name: str | None,
    timeout_s: float,
    *,
    stop: Callable[[dict[str, Any]], bool],
    sample_deadline: float,
) -> list[dict[str, Any]]:
    """Each case in its own process; index -1 only loads the program. Ends after a result `stop` accepts.

    A case's wall deadline is its timer plus a second (prime_code's outer slack), cut to what is left of the
    sample's `sample_timeout_s`: running out of it is the program's slowness, a `timeout` verdict like any
    other (a typed error would let a program that cannot solve a problem trade its 0 for no score)."""
    loop = asyncio.get_running_loop()
    results: list[dict[str, Any]] = []
    for index in indices:
        case_job: dict[str, Any] = {"solution": job["solution"], "fn_name": fn_name, "timeout_s": timeout_s}
        if index >= 0:
            case_job["input"] = job["inputs"][index]
        full_s = timeout_s + 1.0
        deadline_s = min(full_s, sample_deadline - loop.time())
        outcome: dict[str, Any] = {"verdict": "timeout"}
        if deadline_s >= _MIN_CASE_S:
            try:
                outcome = await run.run_case(case_job, fn_name is not None, deadline_s)
            except SandboxNotStarted:
                if deadline_s >= full_s:
                    raise  # the sandbox was slow with the whole budget: not the program's doing
        # The case number is ours, never the sandbox's: the sandbox only gives us an output and an exit.
        results.append({**outcome, "case": index})
        if stop(results[-1]):
            break
    return results


async def judge(
    run: _Run, job: dict[str, Any], outputs: list[Any], continuous: bool, sample_timeout_s: float
) -> dict[str, Any]:
    """prime_code's two passes: every case in order (stopping at the first error), then one by one."""
    cases = len(job["inputs"])
    call_based = job.get("fn_name") is not None
    deadline = asyncio.get_running_loop().time() + sample_timeout_s
    # With no cases the program is still loaded, and scores 1.0 when it loads (prime_code's all([])).
    indices = list(range(cases)) or [-1]

    def verdict(result: dict[str, Any]) -> str:
        return _verdict(result, outputs[result["case"]] if result["case"] >= 0 else None, call_based)

    def first_pass_decided(result: dict[str, Any]) -> bool:
        # prime_code stops at the first error. With `continuous`, the first case that does not pass already
        # hands the score to the retry pass (whose verdicts are the ones reported): stop there too.
        return verdict(result) not in ("pass", "ok") if continuous else result["verdict"] != "ok"

    first = await _run_cases(
        run, job, indices, job.get("fn_name"), job["case_timeout_s"], stop=first_pass_decided,
        sample_deadline=deadline,
    )  # fmt: skip
    verdicts = [verdict(r) for r in first]
    if len(first) == len(indices) and all(v in ("pass", "ok") for v in verdicts):
        return {"score": 1.0, "all_passed": True, "verdicts": verdicts if cases else []}
    if not continuous:
        return {"score": 0.0, "all_passed": False, "verdicts": verdicts}
    # A fresh sandbox for the retry pass when the backend keeps one across cases (`ZygoteRun`): which first-
    # pass cases ran would tell a program which of its answers failed.
    start_pass = getattr(run, "start_pass", None)
    if start_pass is not None:
        await start_pass()
    # The retry pass runs every program as a stdin program (prime_code's one-by-one cases carry no fn_name).
    retry_indices = list(range(min(cases, int(job["each_cases"]))))
    retry = await _run_cases(
        run, job, retry_indices, None, job["retry_case_timeout_s"], stop=lambda _: False,
        sample_deadline=deadline,
    )  # fmt: skip
    verdicts = [_verdict(r, outputs[r["case"]], False) for r in retry]
    passed = sum(v == "pass" for v in verdicts)
    return {"score": passed / max(1, len(verdicts)), "all_passed": False, "verdicts": verdicts}
