"""OpenRLHF 0.11.2's reward client, imported from its own wheel at test time (nothing of it is in this repo).

OpenRLHF cannot be installed here (it pins deepspeed, flash-attn and vllm), so `.ci/setup` downloads its
wheel with `pip download --no-deps` into `.venv/trainer-src/`. Its remote-reward client lives in
`openrlhf/utils/agent.py` (`SingleTurnAgentExecutor`), which needs only aiohttp and
`openrlhf.utils.logging_utils`; what stands in the way is `openrlhf/utils/__init__.py`, which imports the
deepspeed strategy. So the `openrlhf.utils` package object is created empty (its `__path__` still points into
the wheel) and `agent`/`logging_utils` are then imported from the wheel unchanged: the only stub is that one
package `__init__`.

vLLM's engine cannot run here either; `VLLMStandIn` answers `generate()` the way `agent.py` reads vLLM's
`RequestOutput` (`outputs[0].token_ids`, `.finish_reason`, `.logprobs`).
"""

from __future__ import annotations

import importlib
import sys
import types
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSION = "0.11.2"
WHEEL_DIR = Path(sys.prefix) / "trainer-src"


def wheel_path() -> Path:
    found = sorted(WHEEL_DIR.glob(f"openrlhf-{VERSION}-*.whl"))
    if not found:
        raise FileNotFoundError(
            f"no OpenRLHF {VERSION} wheel in {WHEEL_DIR}: run .ci/setup "
            f"(pip download --no-deps openrlhf=={VERSION} -d {WHEEL_DIR})"
        )
    return found[0]


def import_agent_module() -> types.ModuleType:
    """`openrlhf.utils.agent` from the wheel, with only `openrlhf/utils/__init__.py` skipped."""
    if "openrlhf.utils.agent" in sys.modules:
        return sys.modules["openrlhf.utils.agent"]
    wheel = wheel_path()
    with zipfile.ZipFile(wheel) as zf:
        purelib = next(
            n.split("openrlhf/")[0] for n in zf.namelist() if n.endswith("openrlhf/utils/agent.py")
        )
    root = f"{wheel}/{purelib.rstrip('/')}"  # zipimport reads a package from inside the wheel
    sys.path.insert(0, root)
    importlib.import_module("openrlhf")  # its real (empty) __init__
    utils = types.ModuleType("openrlhf.utils")
    utils.__path__ = [f"{root}/openrlhf/utils"]
    sys.modules["openrlhf.utils"] = utils
    return importlib.import_module("openrlhf.utils.agent")


@dataclass
class SamplingParams:
    """The fields of vLLM's SamplingParams that agent.py reads and writes."""

    max_tokens: int | None = None
    logprobs: int | None = None


@dataclass
class _Completion:
    token_ids: list[int]
    finish_reason: str
    logprobs: Any = None


@dataclass
class _RequestOutput:
    outputs: list[_Completion]


@dataclass
class VLLMStandIn:
    """Answers each `generate` with the next scripted response (tokenised + eos, cut at max_tokens)."""

    tokenizer: Any
    responses: Sequence[str]
    prompts_seen: list[list[int]] = field(default_factory=list)

    async def generate(
        self, prompt_token_ids: list[int], params: SamplingParams, multi_modal_data: Any = None
    ) -> _RequestOutput:
        text = self.responses[len(self.prompts_seen) % len(self.responses)]
        self.prompts_seen.append(list(prompt_token_ids))
        ids = [*self.tokenizer(text, add_special_tokens=False)["input_ids"], self.tokenizer.eos_token_id]
        limit = params.max_tokens or len(ids)
        finish = "length" if len(ids) > limit else "stop"
        return _RequestOutput(outputs=[_Completion(token_ids=ids[:limit], finish_reason=finish)])
