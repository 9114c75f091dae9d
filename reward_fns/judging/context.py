"""What a server passes a judge with each call, and the `JudgeEndpoint` made of it and the judge's settings.

The names are the injectable keywords of `reward_fns/contract.py` (verl passes `reward_router_address` and
`reward_model_tokenizer` when a reward model is configured; the gateway also the others)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import JudgeEndpoint
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.settings import GenerationSettings
from rewardfleet.services.common.router_http import resolve_address


@dataclass(frozen=True)
class JudgeContext:
    """Where the routers are, the shared HTTP session, the judge's tokenizer, and the sample's prompt,
    images and uid (the seed key of `generation.seed_uid`)."""

    reward_router_address: str | None = None
    router_addresses: Mapping[str, str] | None = None
    http_client: aiohttp.ClientSession | None = None
    reward_model_tokenizer: Any = None
    prompt: Any = None
    images: Sequence[str] | None = None
    uid: str | None = None

    def address(self, pool: str) -> str:
        """The `host:port` of `pool`'s router (the default router when the pool has none of its own)."""
        try:
            return resolve_address(pool, self.router_addresses, self.reward_router_address)
        except ValueError as exc:
            raise JudgeConfigError(str(exc)) from exc

    def endpoint(
        self, address: str, model: str, timeout_s: float, generation: GenerationSettings, regex: str | None
    ) -> JudgeEndpoint:
        return JudgeEndpoint(
            session=self.http_client,
            address=address,
            model=model,
            use_generate=generation.use_generate,
            tokenizer=self.reward_model_tokenizer,
            max_tokens=generation.max_tokens,
            temperature=generation.temperature,
            timeout_s=timeout_s,
            regex=regex,
            sampling_seed=generation.sampling_seed,
            seed_key=self.uid if generation.seed_uid else None,
        )
