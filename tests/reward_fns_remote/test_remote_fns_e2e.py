"""Each remote reward function, called directly with a real aiohttp session, against a real sglang-router in
front of the SGLang stand-in (judge with canned verdicts, reward model, encoder), including failure paths."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from transformers import AutoTokenizer

from bench.harness.processes import free_port
from bench.harness.tiny_models import build_tiny_qwen2
from bench.harness.waiting import eventually_async
from rewardfleet.reward_fns import judge, reward_model, rule_then_judge, similarity
from rewardfleet.reward_fns.judging.verdicts import VerdictParseError
from rewardfleet.reward_fns.reward_model import build_disrm_input
from tests.sglang_standin import standin_embedding, standin_reward
from tests.support.remote_fleet import Fleet


def reply(text: str) -> dict[str, str]:
    """extra_info whose question makes the stand-in judge answer `text` (it echoes <standin-reply>)."""
    return {"question": f"What is 6*7? <standin-reply>{text}</standin-reply>"}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return AutoTokenizer.from_pretrained(build_tiny_qwen2(tmp_path_factory.mktemp("tok"), kind="causal"))


def judge_kwargs(fleet: Fleet, session: aiohttp.ClientSession, **extra: Any) -> dict[str, Any]:
    return {
        "reward_router_address": fleet.reward_model.address,  # the default router is another pool
        "router_addresses": fleet.router_addresses,
        "http_client": session,
        **extra,
    }


# --- judge -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "score"), [("Verdict: correct", 1.0), ("Looks off.\nVerdict: incorrect", 0.0)]
)
async def test_judge_chat_correctness(
    fleet: Fleet, http_client: aiohttp.ClientSession, verdict: str, score: float
) -> None:
    before = fleet.judge.served().get("/v1/chat/completions", 0)
    result = await judge.compute_score("x", "42", "42", reply(verdict), **judge_kwargs(fleet, http_client))
    usage = result.pop("usage")  # the server's own token counts, for the gateway's TPM budgets
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert result == {
        "score": score,
        "judge_verdict": "correct" if score else "incorrect",
        "judge_verdict_source": "label",
        "judge_response": verdict,
        "judge_template": "correctness",
        "judge_pool": "judge",
        "guard": "",
    }
    assert fleet.judge.served()["/v1/chat/completions"] == before + 1


async def test_judge_rubric_score_is_normalised(fleet: Fleet, http_client: aiohttp.ClientSession) -> None:
    result = await judge.compute_score(
        "x", "42", "42", reply("Good.\nScore: 8"), **judge_kwargs(fleet, http_client, template="rubric")
    )
    assert result["score"] == pytest.approx(7 / 9) and result["judge_verdict"] == "8"


async def test_judge_json_verdict(fleet: Fleet, http_client: aiohttp.ClientSession) -> None:
    result = await judge.compute_score(
        "x",
        "42",
        "42",
        reply('{"score": 10, "why": "exact"}'),
        **judge_kwargs(fleet, http_client, template="rubric"),
    )
    assert (result["score"], result["judge_verdict_source"]) == (1.0, "json")


async def test_judge_pairwise_both_orders_flips_position(
    fleet: Fleet, http_client: aiohttp.ClientSession
) -> None:
    # The stand-in says [[A]] both times: our response wins as A and loses as B, so the mean is 0.5.
    kwargs = judge_kwargs(fleet, http_client, template="pairwise")
    one = await judge.compute_score("x", "42", "41", reply("Verdict: [[A]]"), **kwargs)
    both = await judge.compute_score(
        "x", "42", "41", reply("Verdict: [[A]]"), **kwargs, verdict={"pairwise_both_orders": True}
    )
    assert one["score"] == 1.0
    assert both["score"] == 0.5 and both["judge_verdict"] == "A / A"


async def test_judge_generate_with_token_ids(
    fleet: Fleet, http_client: aiohttp.ClientSession, tokenizer: Any
) -> None:
    # Token ids carry no <standin-reply>, so the stand-in answers with its canned text "Verdict: correct".
    before = fleet.judge.served().get("/generate", 0)
    result = await judge.compute_score(
        "x", "42", "42", {"question": "What is 6*7?"},
        **judge_kwargs(
            fleet, http_client, generation={"use_generate": True}, reward_model_tokenizer=tokenizer
        ),
    )  # fmt: skip
    assert (result["score"], result["judge_response"]) == (1.0, "Verdict: correct")
    assert fleet.judge.served()["/generate"] == before + 1


async def test_judge_generate_without_tokenizer_is_a_config_error(
    fleet: Fleet, http_client: aiohttp.ClientSession
) -> None:
    with pytest.raises(judge.JudgeConfigError, match="tokenizer"):
        await judge.compute_score(
            "x", "42", "42", reply("x"), **judge_kwargs(fleet, http_client, generation={"use_generate": True})
        )


async def test_judge_garbage_raises_verdict_parse_error(
    fleet: Fleet, http_client: aiohttp.ClientSession
) -> None:
    with pytest.raises(VerdictParseError, match="no binary verdict") as info:
        await judge.compute_score(
            "x", "42", "42", reply("I cannot decide."), **judge_kwargs(fleet, http_client)
        )
    assert info.value.text == "I cannot decide."


async def test_judge_cut_at_max_tokens_is_a_truncation_error(
    fleet: Fleet, http_client: aiohttp.ClientSession
) -> None:
    text = "Let me check this very carefully, step by step. Verdict: correct"
    with pytest.raises(judge.JudgeTruncatedError, match="cut at max_tokens"):
        await judge.compute_score(
            "x", "42", "42", reply(text), **judge_kwargs(fleet, http_client, generation={"max_tokens": 8})
        )


async def test_judge_4xx_from_server_is_a_call_error(
    fleet: Fleet, http_client: aiohttp.ClientSession
) -> None:
    # The reward-model pool does not serve chat: SGLang answers 400, the router passes it on unretried.
    kwargs = judge_kwargs(fleet, http_client, pool="reward_model")
    with pytest.raises(judge.JudgeCallError) as info:
        await judge.compute_score("x", "42", "42", reply("Verdict: correct"), **kwargs)
    assert info.value.status == 400 and info.value.kind == "http_status"
    assert "not served by a reward model" in info.value.body


async def test_judge_server_failure_is_a_call_error(fleet: Fleet, http_client: aiohttp.ClientSession) -> None:
    fleet.judge.control(fail_rate=1.0, fail_status=503)
    try:
        with pytest.raises(judge.JudgeCallError) as info:
            await judge.compute_score(
                "x", "42", "42", reply("Verdict: correct"), **judge_kwargs(fleet, http_client)
            )
    finally:
        fleet.judge.control(fail_rate=0.0)
    assert info.value.status is not None and info.value.status >= 500


async def test_judge_slow_server_times_out(fleet: Fleet, http_client: aiohttp.ClientSession) -> None:
    # The stand-in would answer after a minute; the judge's 0.4 s limit must end the call long before. No
    # wall-clock bound: the stand-in itself reports that the request was abandoned by its client (the router
    # drops the upstream call once the judge gives up) and never served.
    route = "/v1/chat/completions"
    before = fleet.judge.stats()
    fleet.judge.control(delay_ms=60_000)
    try:
        with pytest.raises(judge.JudgeCallError, match=r"within 0\.4s") as info:
            kwargs = judge_kwargs(fleet, http_client, timeout_s=0.4)
            await judge.compute_score("x", "42", "42", reply("Verdict: correct"), **kwargs)
        assert info.value.kind == "timeout"
        after = await wait_for_stats(
            fleet, lambda s: s["abandoned"].get(route, 0) > before["abandoned"].get(route, 0)
        )
    finally:
        fleet.judge.control(delay_ms=0)
    assert after["served"].get(route, 0) == before["served"].get(route, 0)


async def wait_for_stats(
    fleet: Fleet, done: Callable[[dict[str, Any]], bool], timeout_s: float = 30
) -> dict[str, Any]:
    """The judge stand-in's stats once `done(stats)` holds (a bounded wait on a condition, not a sleep)."""

    def reached() -> dict[str, Any]:
        stats = fleet.judge.stats()
        if not done(stats):
            raise AssertionError(stats)  # not yet: a timeout shows the last stats
        return stats

    return await eventually_async(reached, timeout_s=timeout_s, interval_s=0.05)


def attempt_counter() -> tuple[aiohttp.TraceConfig, list[str]]:
    """A trace config recording each HTTP attempt a session makes (its URL), to count retries."""
    attempts: list[str] = []

    async def on_start(_s: aiohttp.ClientSession, _c: Any, params: aiohttp.TraceRequestStartParams) -> None:
        attempts.append(str(params.url))

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(on_start)
    return trace, attempts


async def test_router_down_fails_fast() -> None:
    # "Fast" as a count, not a duration: one attempt plus the single retry of a refused connection.
    dead = f"127.0.0.1:{free_port()}"
    trace, attempts = attempt_counter()
    async with aiohttp.ClientSession(trace_configs=[trace]) as session:
        with pytest.raises(judge.JudgeCallError) as info:
            await judge.compute_score(
                "x", "42", "42", reply("x"), reward_router_address=dead, http_client=session
            )
    assert info.value.kind == "connect"
    assert attempts == [f"http://{dead}/v1/chat/completions"] * 2
    with pytest.raises(reward_model.RewardModelCallError):
        await reward_model.compute_score(
            "x",
            "42",
            None,
            None,
            reward_router_address=dead,
            prompt="hi",
            reward_model_tokenizer=object.__new__(_Tok),
        )
    with pytest.raises(similarity.EncoderCallError):
        await similarity.compute_score("x", "a", "b", reward_router_address=dead)


class _Tok:
    """Just enough of a tokenizer for the router-down path."""

    bos_token = None
    name_or_path = "tok"

    def apply_chat_template(self, chat: list[dict[str, str]], **_: Any) -> str:
        return "|".join(m["content"] for m in chat)


# --- reward model ----------------------------------------------------------------------------------------


async def test_reward_model_score_is_the_last_embedding_element(
    fleet: Fleet, http_client: aiohttp.ClientSession, tokenizer: Any
) -> None:
    chat = [{"role": "user", "content": "What is 2+2?"}]
    before = fleet.reward_model.served().get("/v1/embeddings", 0)
    score = await reward_model.compute_score(
        "x", "4", None, None,
        router_addresses=fleet.router_addresses, http_client=http_client, reward_model_tokenizer=tokenizer,
        prompt=chat,
    )  # fmt: skip
    assert score == {
        "score": standin_reward(build_disrm_input("4", chat, tokenizer)),
        "prompt_source": "prompt",
    }
    assert fleet.reward_model.served()["/v1/embeddings"] == before + 1
    # The default router is used when the pool is not named in router_addresses; same text, same score.
    again = await reward_model.compute_score(
        "x", "4", None, {"raw_prompt": chat},
        reward_router_address=fleet.reward_model.address, router_addresses={},
        reward_model_tokenizer=tokenizer,
    )  # fmt: skip
    assert again == {**score, "prompt_source": "extra_info.raw_prompt"}


async def test_reward_model_on_a_judge_pool_is_a_call_error(
    fleet: Fleet, http_client: aiohttp.ClientSession, tokenizer: Any
) -> None:
    with pytest.raises(reward_model.RewardModelCallError) as info:
        await reward_model.compute_score(
            "x", "4", None, None, reward_router_address=fleet.judge.address, router_addresses={},
            http_client=http_client, reward_model_tokenizer=tokenizer, prompt="hi",
        )  # fmt: skip
    assert info.value.status == 400


# --- similarity --------------------------------------------------------------------------------------------


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )


async def test_similarity_cosine_of_encoder_embeddings(
    fleet: Fleet, http_client: aiohttp.ClientSession
) -> None:
    kwargs: dict[str, Any] = {"router_addresses": fleet.router_addresses, "http_client": http_client}
    raw = {**kwargs, "rescale": "none"}
    same = await similarity.compute_score("x", "the cat sat", "The cat sat", **raw)
    assert same == {
        "score": pytest.approx(1.0), "cosine": pytest.approx(1.0), "baseline": 0.0, "empty_response": False
    }  # fmt: skip
    response, reference = "the cat sat on the mat", "a dog sat on a log"
    result = await similarity.compute_score("x", response, reference, **raw)
    expected = _cos(standin_embedding(response), standin_embedding(reference))
    assert result["cosine"] == pytest.approx(expected, abs=1e-9) and result["score"] == result["cosine"]
    rescaled = await similarity.compute_score("x", response, reference, **kwargs, rescale=True)
    assert rescaled["score"] == pytest.approx((expected + 1) / 2) and rescaled["baseline"] == -1.0
    given = await similarity.compute_score("x", response, reference, **kwargs, baseline=0.25)
    assert given["score"] == pytest.approx((expected - 0.25) / 0.75) and given["cosine"] == result["cosine"]
    via_extra = await similarity.compute_score("x", response, None, {"reference": reference}, **raw)
    assert via_extra["cosine"] == pytest.approx(expected)


async def test_similarity_empty_inputs(fleet: Fleet) -> None:
    before = fleet.encoder.served().get("/v1/embeddings", 0)
    empty = await similarity.compute_score(
        "x", "  ", "ref", reward_router_address=fleet.encoder.address, baseline=0.5
    )
    assert empty == {"score": 0.0, "cosine": 0.0, "baseline": 0.5, "empty_response": True}
    assert fleet.encoder.served().get("/v1/embeddings", 0) == before  # no call made
    with pytest.raises(similarity.SimilarityInputError):
        await similarity.compute_score("x", "resp", "", reward_router_address=fleet.encoder.address)


# --- rule then judge ---------------------------------------------------------------------------------------

SOLUTION = "6 * 7 = 42.\n\nSo the product is 42.\n\nAnswer: 42"


async def test_rule_then_judge_no_flaw_keeps_rule_score(
    fleet: Fleet, http_client: aiohttp.ClientSession
) -> None:
    result = await rule_then_judge.compute_score(
        "math_dapo",
        SOLUTION,
        "42",
        reply("All steps are right. \\boxed{-1}"),
        **judge_kwargs(fleet, http_client),
    )
    assert result == {
        "score": 1.0, "rule_score": 1.0, "acc": True, "pred": "42", "judge_called": True, "is_flawed": False,
        "judge_verdict": "-1", "judge_response": "All steps are right. \\boxed{-1}", "judge_error": "",
        "guard": "",
    }  # fmt: skip


async def test_rule_then_judge_flaw_applies_penalty(fleet: Fleet, http_client: aiohttp.ClientSession) -> None:
    result = await rule_then_judge.compute_score(
        "math_dapo", SOLUTION, "42", reply("Step 1 is unjustified. \\boxed{1}"),
        **judge_kwargs(fleet, http_client, flaw_penalty=0.5),
    )  # fmt: skip
    assert (result["score"], result["is_flawed"], result["judge_verdict"]) == (0.5, True, "1")


async def test_rule_then_judge_binary_template(fleet: Fleet, http_client: aiohttp.ClientSession) -> None:
    result = await rule_then_judge.compute_score(
        "math_dapo", SOLUTION, "42", reply("Verdict: incorrect"),
        **judge_kwargs(fleet, http_client, template="correctness"),
    )  # fmt: skip
    assert (result["score"], result["is_flawed"]) == (0.0, True)


@pytest.mark.parametrize(
    ("solution", "extra", "score"),
    [("Answer: 41", {}, -1.0), (SOLUTION, {"split": "test"}, 1.0)],
    ids=["wrong-answer", "test-split"],
)
async def test_rule_then_judge_skips_the_judge(
    fleet: Fleet, http_client: aiohttp.ClientSession, solution: str, extra: dict[str, Any], score: float
) -> None:
    before = fleet.judge.served().get("/v1/chat/completions", 0)
    extra_info = {**reply("\\boxed{0}"), **extra}
    result = await rule_then_judge.compute_score(
        "math_dapo", solution, "42", extra_info, **judge_kwargs(fleet, http_client)
    )
    assert (result["score"], result["judge_called"], result["is_flawed"]) == (score, False, False)
    assert fleet.judge.served().get("/v1/chat/completions", 0) == before


async def test_rule_then_judge_judge_failure(fleet: Fleet, http_client: aiohttp.ClientSession) -> None:
    with pytest.raises(VerdictParseError):
        await rule_then_judge.compute_score(
            "math_dapo", SOLUTION, "42", reply("no idea"), **judge_kwargs(fleet, http_client)
        )
    kept = await rule_then_judge.compute_score(
        "math_dapo",
        SOLUTION,
        "42",
        reply("no idea"),
        **judge_kwargs(fleet, http_client, on_judge_error="rule"),
    )
    assert (
        kept["score"] == 1.0 and kept["judge_called"] and kept["judge_error"].startswith("VerdictParseError:")
    )


async def test_rule_then_judge_rule_errors() -> None:
    with pytest.raises(rule_then_judge.RuleCheckError, match="no built-in rule function"):
        await rule_then_judge.compute_score("x", "Answer: 1", "1", rule="nope", reward_router_address="h:1")


async def test_rule_then_judge_with_math_verify(fleet: Fleet, http_client: aiohttp.ClientSession) -> None:
    solution = "6 * 7 = 42.\n\nThe answer is $\\frac{84}{2}$."
    kwargs = judge_kwargs(fleet, http_client, rule="math_verify")
    # On the event loop's thread (the main thread here), with math-verify's own timeouts.
    flawed = await rule_then_judge.compute_score("x", solution, "42", reply("\\boxed{0}"), **kwargs)
    assert (flawed["rule_score"], flawed["acc"], flawed["score"], flawed["is_flawed"]) == (
        1.0,
        True,
        0.0,
        True,
    )
    # Timeouts off: no signal.alarm, so it runs in a worker thread.
    no_alarm = {"parsing_timeout_s": None, "verify_timeout_s": None}
    assert rule_then_judge.rule_is_thread_safe("math_verify", no_alarm)
    assert not rule_then_judge.rule_is_thread_safe("math_verify", {})
    wrong = await rule_then_judge.compute_score(
        "x", "The answer is 41.", "42", reply("\\boxed{-1}"), **kwargs, rule_kwargs=no_alarm
    )
    assert (wrong["score"], wrong["acc"], wrong["judge_called"]) == (0.0, False, False)


async def test_rule_then_judge_math_verify_refuses_a_non_main_thread() -> None:

    def in_thread() -> Any:
        return asyncio.run(
            rule_then_judge.compute_score(
                "x", "Answer: 42", "42", rule="math_verify", reward_router_address="h:1"
            )
        )

    with pytest.raises(rule_then_judge.RuleCheckError, match="main thread"):
        await asyncio.to_thread(in_thread)
