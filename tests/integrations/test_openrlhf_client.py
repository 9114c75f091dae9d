"""OpenRLHF 0.11.2's own remote-reward client (`openrlhf/utils/agent.py`, from its wheel) and a live gateway.

`SingleTurnAgentExecutor.execute` runs unchanged: it tokenises the prompt with a real HF tokenizer, truncates
it from the left when it is too long, asks the (stand-in) vLLM engine for tokens, decodes prompt + response
with `skip_special_tokens=False`, and posts `{"query", "prompts", "labels"}` through its own
`_fetch_rewards_via_http` to `--reward.remote_url`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rewardfleet.services.gateway.core import failure_log
from tests.integrations.openrlhf_source import SamplingParams, VLLMStandIn, import_agent_module
from tests.support.live_gateway import LiveGateway

QUESTION = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many in May. How many?"
)


@pytest.fixture(scope="module")
def agent() -> ModuleType:
    return import_agent_module()


@pytest.fixture(scope="module")
def tokenizer(tiny_policy: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_policy)


@pytest.fixture
def openrlhf_log(agent: ModuleType) -> Iterator[list[str]]:
    """What OpenRLHF's client logs (its logger does not propagate, so a handler is attached to it)."""
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    agent.logger.addHandler(handler)
    try:
        yield lines
    finally:
        agent.logger.removeHandler(handler)


def chat_prompt(tokenizer: Any, question: str = QUESTION) -> str:
    """OpenRLHF's dataset applies the chat template to the input (apply_chat_template, generation prompt)."""
    messages = [{"role": "user", "content": question}]
    return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))


async def run_executor(
    agent: ModuleType,
    url: str,
    tokenizer: Any,
    responses: Sequence[str],
    label: Any,
    *,
    prompt: str,
    max_length: int = 1024,
    max_tokens: int = 32,
) -> list[dict[str, Any]]:
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=url)
    engine = VLLMStandIn(tokenizer, responses)
    outputs = []
    for _ in responses:
        params = SamplingParams(max_tokens=max_tokens)
        outputs.append(await executor.execute(prompt, label, params, max_length, tokenizer, engine))
    return outputs


async def test_rewards_through_openrlhf_client(
    agent: ModuleType, trainer_gateway: LiveGateway, tokenizer: Any
) -> None:
    outputs = await run_executor(
        agent,
        f"{trainer_gateway.url}/openrlhf/gsm8k",
        tokenizer,
        ["48/2 = 24, 48+24 = 72.\n#### 72", "#### 71"],
        "72",
        prompt=chat_prompt(tokenizer),
    )
    # One-sample lists, as OpenRLHF's own `serve_rm` answers (its samples_generator wraps them in a tensor).
    assert [o["reward"] for o in outputs] == [[1.0], [0.0]]
    assert [o["scores"] for o in outputs] == [[1.0], [0.0]]
    assert outputs[0]["extra_logs"]["query_split_failed"] == [0.0]
    assert outputs[0]["extra_logs"]["reward_failed"] == [0.0]


@pytest.mark.parametrize("kept_tokens", [3, 12, 40])
async def test_left_truncated_prompt_any_length(
    agent: ModuleType, trainer_gateway: LiveGateway, tokenizer: Any, kept_tokens: int
) -> None:
    """OpenRLHF cuts a long prompt to its last `max_length - max_tokens` tokens but posts the full prompt:
    the gateway must still find where the response starts, however little of the prompt survived."""
    prompt = chat_prompt(tokenizer)
    assert len(tokenizer(prompt, add_special_tokens=False)["input_ids"]) > kept_tokens
    outputs = await run_executor(
        agent,
        f"{trainer_gateway.url}/openrlhf/exact",
        tokenizer,
        ["72"],
        "72",
        prompt=prompt,
        max_length=kept_tokens + 8,
        max_tokens=8,
    )
    assert outputs[0]["extra_logs"]["query_split_failed"] == [0.0]
    assert outputs[0]["reward"] == [1.0]  # exact: the response alone ("72" + "<|im_end|>") equals the label


async def test_function_failure_what_openrlhf_shows_and_what_the_gateway_logs(
    agent: ModuleType, trainer_gateway: LiveGateway, tokenizer: Any, openrlhf_log: list[str]
) -> None:
    """OpenRLHF retries the 500 five times, then trains the sample without a reward and logs only the status
    line; the reason (function, data source, error, uid) is in the gateway's log at its default level."""
    outputs = await run_executor(
        agent,
        f"{trainer_gateway.url}/openrlhf/boom?data_source=openai/gsm8k",
        tokenizer,
        ["#### 72"],
        "72",
        prompt=chat_prompt(tokenizer),
    )
    assert outputs[0]["reward"] is None and outputs[0]["scores"] is None
    assert sum("500, message='Internal Server Error'" in line for line in openrlhf_log) == 5
    gateway_log = trainer_gateway.child.log()
    assert f"WARNING {failure_log.__name__}: reward function 'boom' failed on sample uid=" in gateway_log
    assert "data_source='openai/gsm8k': ValueError: boom: #### 72<|im_end|>" in gateway_log
