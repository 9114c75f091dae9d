"""What a generation request carries and its decoding state: sampling parameters, inputs, results, `Row`.

A leaf of the generation runner: `decode_batch.py` (the running batch) and `generation.py` (the runner that
owns the model) both import it, and neither imports the other's module at type-checking time in a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rewardfleet.services.model_server.runners.common import TextInput
from rewardfleet.services.model_server.runners.constraints import Constraint


@dataclass(frozen=True, slots=True)
class SamplingParams:
    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    no_stop_trim: bool = False
    seed: int | None = None
    constraint: Constraint | None = None  # regex / json_schema / ebnf the output must match

    @property
    def greedy(self) -> bool:
        return self.temperature < 1e-5 or self.top_k == 1


@dataclass(frozen=True, slots=True)
class GenerationInput:
    prompt: TextInput
    params: SamplingParams = field(default_factory=SamplingParams)


# SGLang 0.5.23 samples with this seed when a request sets none and deterministic inference is on.
DEFAULT_SAMPLING_SEED = 42


def seeded(item: Any) -> Any:
    """`item` with seed 42 when it is a sampled generation request without a seed; anything else as is."""
    params = getattr(item, "params", None)
    if params is None or not hasattr(params, "seed") or params.seed is not None or params.greedy:
        return item
    return replace(item, params=replace(params, seed=DEFAULT_SAMPLING_SEED))


@dataclass(frozen=True, slots=True)
class GenerationResult:
    text: str
    output_ids: list[int]
    finish_reason: dict[
        str, Any
    ]  # SGLang's shape: {"type": "stop", "matched": id|str} | {"type": "length", ...}
    prompt_tokens: int

    @property
    def completion_tokens(self) -> int:
        return len(self.output_ids)

    @property
    def matched_stop(self) -> int | str | None:
        return self.finish_reason.get("matched") if self.finish_reason.get("type") == "stop" else None


@dataclass(frozen=True, slots=True)
class NextTokenInput:
    """`/v1/score`: probabilities of `label_token_ids` as the token after `prompt`."""

    prompt: TextInput
    label_token_ids: tuple[int, ...]
    apply_softmax: bool = False


@dataclass(frozen=True, slots=True)
class NextTokenResult:
    probs: list[float]
    prompt_tokens: int


class Row:
    """Decoding state of one request in a `DecodeBatch`."""

    def __init__(
        self, prompt_len: int, params: SamplingParams, eos_ids: set[int], generator: Any, matcher: Any = None
    ) -> None:
        self.prompt_len = prompt_len
        self.params = params
        self.stop_ids = set(params.stop_token_ids) | (set() if params.ignore_eos else eos_ids)
        self.generator = generator
        self.matcher = matcher  # llguidance matcher of a constrained request
        self.output: list[int] = []
        self.finish: dict[str, Any] | None = None
        self.trim_text: str | None = None  # the text with the stop string cut off

    def append(self, tok: int, tokenizer: Any) -> None:
        """Take the sampled token: feed the grammar, then check eos, stop strings and the token budget."""
        self.output.append(tok)
        if self.matcher is not None and tok not in self.stop_ids:
            self.matcher.consume_token(tok)
        if tok in self.stop_ids:
            self.finish = {"type": "stop", "matched": tok}
            return
        if self.params.stop:
            text = tokenizer.decode(self.output, skip_special_tokens=self.params.skip_special_tokens)
            # Checked after every token, so a match is always one the newest token completed.
            for stop in self.params.stop:
                pos = text.find(stop)
                if pos != -1:
                    self.finish = {"type": "stop", "matched": stop}
                    self.trim_text = text if self.params.no_stop_trim else text[:pos]
                    return
        if len(self.output) >= self.params.max_new_tokens:
            self.finish = {"type": "length", "length": len(self.output)}
