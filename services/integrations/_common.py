"""Pieces shared by the trainer-side adapters: one client per event loop, text of a completion."""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from rewardfleet.services.client import AsyncRewardClient, RetryPolicy, RewardClient
from rewardfleet.services.client.ray_discovery import is_ray_address, published_here
from rewardfleet.services.client.ray_discovery import resolve as resolve_on_ray

URL_ENV = "REWARDFLEET_URL"
# A gateway with API keys (or tenants, docs/tenants.md): the adapters send $REWARDFLEET_API_KEY as the Bearer
# key and $REWARDFLEET_RUN as the run label header (the tenant's per-run metrics and usage).
KEY_ENV = "REWARDFLEET_API_KEY"
RUN_ENV = "REWARDFLEET_RUN"
RUN_HEADER = "X-Rewardfleet-Run"
# extra_info[GROUP_KEY] = {"group_id", "group_size"}: a sample's GRPO group, put there by a trainer-side piece
# that knows it (verl_group.GroupRewardManager) and sent by the adapters as the gateway's group fields.
GROUP_KEY = "rewardfleet_group"
DEFAULT_URL = "http://127.0.0.1:8000"


def auth_from_env() -> dict[str, Any]:
    """`api_key` and `headers` for a client, from $REWARDFLEET_API_KEY and $REWARDFLEET_RUN (unset or empty:
    none)."""
    run = os.environ.get(RUN_ENV)
    return {"api_key": os.environ.get(KEY_ENV) or None, "headers": {RUN_HEADER: run} if run else None}


def gateway_url(explicit: str | None) -> str:
    """The gateway address: the explicit argument, else `$REWARDFLEET_URL`, else `ray:` when a fleet on the
    Ray cluster this process is connected to publishes its gateways (`rewardfleet up --ray`), else the local
    default. A `ray:[NAME]` address is checked on Ray now and kept as it is: the clients made from it send
    their posts round that fleet's gateways (`client/ray_discovery.py`)."""
    chosen = explicit or os.environ.get(URL_ENV) or published_here() or DEFAULT_URL
    if is_ray_address(chosen):
        resolve_on_ray(chosen)  # GatewayNotOnRay here, not at the first post
    return chosen


class ClientPerLoop:
    """Hands out one `AsyncRewardClient` per (event loop, settings).

    aiohttp sessions belong to the loop that made them, and trainers call reward functions from loops they
    own (verl's reward-loop workers, TRL's async reward thread), so the adapters cannot make one client up
    front. The clients are dropped with their loops.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[Any, ...], AsyncRewardClient]
        ] = weakref.WeakKeyDictionary()

    def get(
        self, url: str, *, timeout_s: float, max_concurrency: int, retry: RetryPolicy | None = None
    ) -> AsyncRewardClient:
        loop = asyncio.get_running_loop()
        key = (url, timeout_s, max_concurrency, retry)
        with self._lock:
            per_loop = self._clients.setdefault(loop, {})
            client = per_loop.get(key)
            if client is None or client.closed:
                client = AsyncRewardClient(
                    url, timeout_s=timeout_s, max_concurrency=max_concurrency, retry=retry, **auth_from_env()
                )
                per_loop[key] = client
            return client

    async def aclose(self) -> None:
        """Close the clients of the running loop (call before the loop ends to avoid unclosed sessions)."""
        with self._lock:
            clients = list(self._clients.pop(asyncio.get_running_loop(), {}).values())
        for client in clients:
            await client.aclose()


def close_at_exit(client: RewardClient) -> RewardClient:
    """Close a blocking client (and its loop thread) when the interpreter exits."""
    atexit.register(client.close)
    return client


_sync_clients: dict[tuple[str, float, int], RewardClient] = {}
_sync_lock = threading.Lock()


def shared_sync_client(url: str, *, timeout_s: float, max_concurrency: int = 64) -> RewardClient:
    """One blocking client per (url, settings) for the whole process, closed at exit: sync reward managers
    call from many threads, and each client owns a loop thread and a connection pool worth sharing."""
    key = (url, timeout_s, max_concurrency)
    with _sync_lock:
        client = _sync_clients.get(key)
        if client is None:
            client = close_at_exit(
                RewardClient(url, timeout_s=timeout_s, max_concurrency=max_concurrency, **auth_from_env())
            )
            _sync_clients[key] = client
        return client


def message_text(content: Any) -> str:
    """The text of a chat message's `content`: a string, or a list of parts with `{"type": "text"}`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") == "text":
                parts.append(str(part.get("text", "")))
        return "".join(parts)
    return str(content)


def completion_text(completion: Any) -> str:
    """A completion as one string: itself if standard, else its assistant messages joined (conversational)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return message_text(completion.get("content"))
    if isinstance(completion, Sequence):
        texts = [
            message_text(m.get("content"))
            for m in completion
            if isinstance(m, Mapping) and m.get("role", "assistant") == "assistant"
        ]
        return "".join(texts)
    return str(completion)
