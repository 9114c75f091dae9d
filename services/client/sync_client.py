"""`RewardClient`: the blocking client, for code that has no event loop of its own.

It runs an `AsyncRewardClient` on a private event loop in a daemon thread and waits for its answers, so the
pooling, the concurrency limit and the retry loop are the async client's — there is no second copy of them.
It can be called from any thread (also from inside another running event loop's thread, e.g. a notebook).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from rewardfleet.services.client._retry import RetryPolicy
from rewardfleet.services.client.async_client import DEFAULT_BASE_URL, AsyncRewardClient
from rewardfleet.services.client.models import Sample, ScoreResult
from rewardfleet.services.client.sessions import AsyncSession, SessionVerdict

T = TypeVar("T")


class RewardClient:
    """Blocking twin of `AsyncRewardClient`: same arguments, same methods, same results."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout_s: float = 120.0,
        max_concurrency: int = 64,
        max_connections: int | None = None,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        api_key: str | None = None,
    ) -> None:
        self._async = AsyncRewardClient(
            base_url,
            timeout_s=timeout_s,
            max_concurrency=max_concurrency,
            max_connections=max_connections,
            retry=retry,
            headers=headers,
            api_key=api_key,
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="rewardfleet-client", daemon=True)
        self._thread.start()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def base_url(self) -> str:
        return self._async.base_url

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            asyncio.run_coroutine_threadsafe(self._async.aclose(), self._loop).result(timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise RuntimeError("RewardClient is closed")
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError(
                "RewardClient called from its own event-loop thread; use AsyncRewardClient there"
            )
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # e.g. KeyboardInterrupt: do not leave requests running behind the caller's back
            raise

    def score(
        self,
        sample: Sample | Mapping[str, Any] | None = None,
        /,
        *,
        timeout_s: float | None = None,
        **fields: Any,
    ) -> ScoreResult:
        """See `AsyncRewardClient.score`."""
        return self._run(self._async.score(sample, timeout_s=timeout_s, **fields))

    def score_many(
        self,
        samples: Iterable[Sample | Mapping[str, Any]],
        *,
        progress: bool = False,
        timeout_s: float | None = None,
    ) -> list[ScoreResult]:
        """See `AsyncRewardClient.score_many`."""
        return self._run(self._async.score_many(list(samples), progress=progress, timeout_s=timeout_s))

    def score_batch(
        self, samples: Iterable[Sample | Mapping[str, Any]], *, timeout_s: float | None = None
    ) -> list[ScoreResult]:
        """See `AsyncRewardClient.score_batch`."""
        return self._run(self._async.score_batch(list(samples), timeout_s=timeout_s))

    def health(self) -> bool:
        return self._run(self._async.health())

    def ready(self) -> bool:
        return self._run(self._async.ready())

    def reward_fns(self) -> Any:
        return self._run(self._async.reward_fns())

    def environments(self) -> list[dict[str, Any]]:
        return self._run(self._async.environments())

    def session(self, env: str, task: Mapping[str, Any] | None = None, /, **fields: Any) -> Session:
        """See `AsyncRewardClient.session`: `with client.session(env, task) as s: s.call(tool, **args)`."""
        return Session(self, self._async.session(env, task, **fields))


class Session:
    """Blocking twin of `AsyncSession` (sessions.py), run on its client's event loop."""

    def __init__(self, client: RewardClient, session: AsyncSession) -> None:
        self._client = client
        self._async = session

    @property
    def id(self) -> str | None:
        return self._async.id

    @property
    def env(self) -> str:
        return self._async.env

    def __enter__(self) -> Session:
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def open(self) -> Session:
        self._client._run(self._async.open())
        return self

    def call(self, tool: str, /, **arguments: Any) -> Any:
        return self._client._run(self._async.call(tool, **arguments))

    def verify(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> SessionVerdict:
        return self._client._run(self._async.verify(body, **fields))

    def state(self) -> dict[str, Any]:
        return self._client._run(self._async.state())

    def close(self) -> None:
        self._client._run(self._async.close())
