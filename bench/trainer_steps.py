"""The pieces of the trainer-view benchmark: a GRPO step's batch as verl's `DataProto`, and verl 0.9.1's
own reward loop scoring it in this process.

verl's trainer hands each step's batch to `RewardLoopManager`, which splits it over `reward.num_workers`
Ray actors of `RewardLoopWorker`; each worker calls its reward manager's `run_single` for every sample of
its share at once (decode in a thread, then the reward function: sync ones in the loop's thread executor,
async ones awaited). Here one `RewardLoopWorker` (verl's class, not wrapped as an actor) scores the whole
batch: on 2 cores, more actors add processes, not cores. Its config is verl's own `reward/reward.yaml`.
"""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# verl's config stack (omegaconf) needs antlr4 4.9; the venv keeps math-verify's 4.13.2 and .ci/setup puts 4.9
# aside (see tests/integrations/test_verl_trainer_code.py). Only this process and the ones it spawns (verl's
# math-verify pool) see it; the gateway runs with the venv's own.
_ANTLR_FOR_VERL = Path(__file__).resolve().parent.parent / ".venv" / "antlr4-4.9"
if _ANTLR_FOR_VERL.is_dir() and str(_ANTLR_FOR_VERL) not in sys.path:
    sys.path.insert(0, str(_ANTLR_FOR_VERL))

KINDS = ("gsm8k", "math_verify", "judge")
PROMPT_TOKENS = 32

# Path 1 for the CPU-heavy kind: verl has no data source that dispatches to math-verify; a verl user
# points custom_reward_function at a file like this one, which calls verl's own math-verify scorer
# (`verl.utils.reward_score.math_verify`: a 4-process spawn pool, 30 s timeout per call).
VERL_MATH_VERIFY_FN = """
from verl.utils.reward_score import math_verify


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return math_verify.compute_score(solution_str, ground_truth)
"""


@dataclass
class Step:
    """One step's batch: the `DataProto` verl's reward loop receives, and what built it."""

    kind: str
    data: Any  # verl.DataProto (imported lazily: verl pulls in ray and torch)
    samples: int
    response_tokens: int


def train_tokenizer(folder: Path) -> Path:
    """A byte-level BPE tokenizer (4k vocabulary) trained on this benchmark's own texts, saved for
    `AutoTokenizer`. It gives realistic characters per token (~3) on those texts, so an N-token response is
    about as long as a real one; the tiny test tokenizers are ~1 byte per token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=4000,
        special_tokens=["<|endoftext|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = [_gsm8k_text(i, 400) for i in range(200)] + [_math_text(i, 400) for i in range(200)]
    backend.train_from_iterator(corpus, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.save_pretrained(folder)
    return folder


def _gsm8k_sentence(rng: random.Random) -> str:
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    return f"Natalia sold {a} clips in April and {b} more in May, so she sold {a} + {b} = {a + b} clips."


def _math_sentence(k: int, a: int, b: int) -> str:
    return (
        f"Step {k}: we have $\\frac{{{a + k}}}{{{b}}} - \\frac{{{k}}}{{{b}}} = \\frac{{{a}}}{{{b}}}$, "
        f"and $x^{{2}} + {k}x = {k * k}$ gives $x = {k}\\cdot\\frac{{\\sqrt{{5}} - 1}}{{2}}$."
    )


def _gsm8k_text(i: int, words: int) -> str:
    rng = random.Random(i)
    return " ".join(_gsm8k_sentence(rng) for _ in range(words // 20 + 1))


def _math_text(i: int, words: int) -> str:
    return " ".join(_math_sentence(k, i % 997 + 1, i % 991 + 2) for k in range(1, words // 30 + 2))


class _Sentences:
    """Whole sentences of worked reasoning, token-encoded once each, so a response is cut at a sentence
    boundary (a response cut inside a LaTeX expression makes math-verify do odd, slow work)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        rng = random.Random(0)
        self._pools = {
            "math_verify": [
                self._encode(_math_sentence(k, rng.randint(1, 997), rng.randint(2, 991)))
                for k in range(1, 65)
            ],
            "other": [self._encode(_gsm8k_sentence(rng)) for _ in range(64)],
        }

    def _encode(self, sentence: str) -> list[int]:
        ids: list[int] = self._tokenizer.encode(" " + sentence)
        return ids

    def filler(self, kind: str, i: int, budget: int) -> list[int]:
        """Sentences from a shared pool, starting at a per-sample offset; the answer tail after them makes
        each response unique (math-verify caches parses, and a repeated input would measure the cache)."""
        pool = self._pools.get(kind, self._pools["other"])
        ids: list[int] = []
        for n in range(budget):  # every sentence has tokens: the loop ends long before `budget` turns
            sentence = pool[(i + n) % len(pool)]
            if len(ids) + len(sentence) > budget:
                break
            ids += sentence
        return ids


def _sample(kind: str, i: int, rng: random.Random) -> tuple[str, str, str, dict[str, Any]]:
    """(data_source, answer tail, ground truth, extra_info) of sample i; half are correct."""
    correct = i % 2 == 0
    if kind == "gsm8k":
        truth = str(rng.randint(10, 9999))
        answer = truth if correct else str(int(truth) + 1)
        return "openai/gsm8k", f" The answer is\n#### {answer}", truth, {"index": i}
    if kind == "math_verify":
        a, b = i % 997 + 1, i % 991 + 2
        # Written differently from the gold answer, so math-verify compares symbolically (its real job).
        shown = f"\\frac{{{a}\\sqrt{{2}}}}{{{b}}} + \\frac{{\\sqrt{{2}}}}{{2}}" if correct else f"{a}"
        truth = f"\\frac{{({2 * a + b})\\sqrt{{2}}}}{{{2 * b}}}"
        return "math_verify", f" So the answer is \\boxed{{{shown}}}.", truth, {"index": i}
    if kind == "judge":
        latency = rng.uniform(1.0, 4.0)
        tail = " Final verdict requested: yes" if correct else " Final verdict requested: no"
        return "judge", tail, "", {"index": i, "judge_latency_s": latency}
    raise ValueError(f"unknown kind {kind!r}")


def make_step(kind: str, samples: int, response_tokens: int, tokenizer: Any, seed: int) -> Step:
    """A GRPO-shaped batch: `samples` responses of `response_tokens` tokens at most (each between half and
    all of it: whole sentences of reasoning, then the answer), right-padded as verl's rollout leaves them."""
    from verl import DataProto

    rng = random.Random(seed)
    sentences = _Sentences(tokenizer)
    prompts = np.full((samples, PROMPT_TOKENS), tokenizer.pad_token_id, dtype=np.int64)
    responses = np.full((samples, response_tokens), tokenizer.pad_token_id, dtype=np.int64)
    mask = np.zeros((samples, PROMPT_TOKENS + response_tokens), dtype=np.int64)
    prompt_ids = tokenizer.encode("Solve the problem and give the final answer.")[:PROMPT_TOKENS]
    sources, models, extras = [], [], []
    for i in range(samples):
        source, tail, truth, extra = _sample(kind, i, rng)
        tail_ids = tokenizer.encode(tail)
        length = rng.randint(response_tokens // 2, response_tokens)
        ids = (sentences.filler(kind, i, length - len(tail_ids)) + tail_ids)[-response_tokens:]
        responses[i, : len(ids)] = ids
        prompts[i, PROMPT_TOKENS - len(prompt_ids) :] = prompt_ids  # left-padded, as verl's prompts are
        mask[i, PROMPT_TOKENS - len(prompt_ids) : PROMPT_TOKENS] = 1
        mask[i, PROMPT_TOKENS : PROMPT_TOKENS + len(ids)] = 1
        sources.append(source)
        models.append({"ground_truth": truth, "style": "rule"})
        extras.append(extra)
    data = DataProto.from_dict(
        tensors={
            "prompts": _tensor(prompts),
            "responses": _tensor(responses),
            "attention_mask": _tensor(mask),
        },
        non_tensors={
            "data_source": np.array(sources, dtype=object),
            "reward_model": np.array(models, dtype=object),
            "extra_info": np.array(extras, dtype=object),
        },
    )
    return Step(kind, data, samples, response_tokens)


def _tensor(array: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(array)


def verl_config(tokenizer_dir: Path, fn_path: str | None, fn_name: str, reward_kwargs: dict[str, Any]) -> Any:
    """verl's own `reward/reward.yaml` plus the policy tokenizer and the custom function (a file path or
    `pkg://module`; None = verl's `default_compute_score`)."""
    import verl
    from omegaconf import OmegaConf

    reward = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" / "reward" / "reward.yaml")
    config = OmegaConf.create(
        {
            "actor_rollout_ref": {"model": {"path": str(tokenizer_dir), "tokenizer_path": None}},
            "reward": reward,
        }
    )
    config.reward.custom_reward_function.path = fn_path
    config.reward.custom_reward_function.name = fn_name
    config.reward.custom_reward_function.reward_kwargs = reward_kwargs
    return config


class RewardActors:
    """verl's reward workers as verl runs them: `RewardLoopManager` starts its `RewardLoopWorker` Ray actors
    once, and each async actor runs every step's `compute_score_batch` on its one event loop for the whole
    training run. So a worker's reward function keeps its clients (and their open connections) from one step
    to the next. Here: one event loop in a thread for the whole benchmark, and one worker per `key` (a path
    and kind), built on its first step and kept. `close()` runs the `after` coroutine functions (closing
    the clients) on that loop and stops it."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_quiet_unclosed)
        self._thread = threading.Thread(target=self._loop.run_forever, name="reward-actors", daemon=True)
        self._thread.start()
        self._workers: dict[str, Any] = {}
        self._closers: set[Callable[[], Any]] = set()

    def score(
        self, key: str, config: Any, step: Step, after: Callable[[], Any] | None = None
    ) -> tuple[float, list[float]]:
        """Seconds the `key` worker's `compute_score_batch` takes for the step, and its scores in order (the
        worker is built before the clock starts, on the first step of `key`)."""
        from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

        async def run() -> tuple[float, list[float]]:
            worker = self._workers.get(key)
            if worker is None:  # its reward manager binds to this running loop
                worker = self._workers[key] = RewardLoopWorker(config)
            started = time.perf_counter()
            outputs = await worker.compute_score_batch(step.data)
            wall = time.perf_counter() - started
            return wall, [float(out["reward_score"]) for out in outputs]

        if after is not None:
            self._closers.add(after)
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def close(self) -> None:
        async def close_all() -> None:
            for closer in self._closers:
                await closer()

        try:
            asyncio.run_coroutine_threadsafe(close_all(), self._loop).result(timeout=60)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()


def _quiet_unclosed(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The benchmark's judge function (verl's side) keeps an aiohttp session per loop and has no hook to
    close it, so at exit aiohttp reports it and every idle connection; anything else is reported as usual."""
    if not str(context.get("message", "")).startswith("Unclosed"):
        loop.default_exception_handler(context)
