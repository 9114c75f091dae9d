"""DisRM input construction (verl's reward loop) with real tiny tokenizers reloaded from disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from transformers import AutoTokenizer

from bench.harness.tiny_models import build_tiny_llama, build_tiny_qwen2
from rewardfleet.reward_fns.reward_model import RewardModelInputError, build_disrm_input, compute_score

# Llama-2 style, without the BOS (this file's own, so the tests do not depend on the builder's template).
PLAIN_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'system' %}{{ '<<SYS>>' + message['content'] + '<</SYS>>' }}"
    "{% else %}{{ ' ' + message['content'] + '</s>' }}{% endif %}"
    "{% endfor %}"
)
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}]


@pytest.fixture(scope="module")
def qwen_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return AutoTokenizer.from_pretrained(build_tiny_qwen2(tmp_path_factory.mktemp("qwen"), kind="seq_cls"))


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("llama"), kind="seq_cls")


@pytest.fixture
def llama_tokenizer(llama_dir: Path) -> Any:
    return AutoTokenizer.from_pretrained(llama_dir)


def test_builder_llama_template_bos_is_stripped(llama_tokenizer: Any) -> None:
    # The tiny Llama's own template writes the BOS, as real Llama templates do; verl strips it once.
    rendered = llama_tokenizer.apply_chat_template(
        [*CHAT, {"role": "assistant", "content": "4"}], add_generation_prompt=False, tokenize=False
    )
    text = build_disrm_input("4", CHAT, llama_tokenizer)
    assert rendered.startswith("<s>") and not text.startswith("<s>")
    assert text == rendered[len("<s>") :]


def test_chatml_input_is_prompt_plus_assistant_turn(qwen_tokenizer: Any) -> None:
    text = build_disrm_input("4", CHAT, qwen_tokenizer)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
        "<|im_start|>assistant\n4<|im_end|>\n"
    )


def test_policy_eos_string_is_removed_from_the_response(qwen_tokenizer: Any) -> None:
    with_eos = build_disrm_input("4<|im_end|>", CHAT, qwen_tokenizer, policy_eos_token="<|im_end|>")
    assert with_eos == build_disrm_input("4", CHAT, qwen_tokenizer)
    # Without the setting the text is taken as sent (the eos then appears twice).
    assert "4<|im_end|><|im_end|>" in build_disrm_input("4<|im_end|>", CHAT, qwen_tokenizer)


def test_leading_bos_string_is_stripped(llama_tokenizer: Any) -> None:
    llama_tokenizer.chat_template = "{{ bos_token }}" + PLAIN_TEMPLATE
    rendered = llama_tokenizer.apply_chat_template(
        [*CHAT, {"role": "assistant", "content": "4"}], add_generation_prompt=False, tokenize=False
    )
    assert rendered.startswith("<s>")
    text = build_disrm_input("4", CHAT, llama_tokenizer)
    assert text == rendered[len("<s>") :]
    assert text == "<<SYS>>Be brief.<</SYS>>[INST] What is 2+2? [/INST] 4</s>"


def test_bos_inside_the_text_is_kept(llama_tokenizer: Any) -> None:
    llama_tokenizer.chat_template = PLAIN_TEMPLATE
    text = build_disrm_input("<s>4", [{"role": "user", "content": "hi"}], llama_tokenizer)
    assert text == "[INST] hi [/INST] <s>4</s>"


async def test_missing_tokenizer_or_prompt_is_a_typed_error(qwen_tokenizer: Any) -> None:
    with pytest.raises(RewardModelInputError, match="reward_model_tokenizer"):
        await compute_score("d", "4", None, None, reward_router_address="127.0.0.1:1", prompt=CHAT)
    with pytest.raises(RewardModelInputError, match="no prompt"):
        await compute_score(
            "d", "4", None, {}, reward_router_address="127.0.0.1:1", reward_model_tokenizer=qwen_tokenizer
        )
    with pytest.raises(RewardModelInputError, match="no router address for pool 'reward_model'"):
        await compute_score("d", "4", None, None, prompt=CHAT, reward_model_tokenizer=qwen_tokenizer)
