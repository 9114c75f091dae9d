"""`AsyncRewardClient`: the asyncio client of the reward gateway.

One pool of keep-alive connections per client (`_transport.py`: lean on the caller's CPU, which a trainer
posting one sample per request pays per post), a semaphore bounding the requests in flight, and exactly one
retry loop (`_request`) shared by every call. A retried sample keeps its `uid`, so the gateway can recognise
the second attempt of a request whose first answer was lost.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from rewardfleet.services.client import ray_discovery
from rewardfleet.services.client._exceptions import (
    GatewayHTTPError,
    GatewayUnavailable,
    RewardFleetError,
    http_error,
)
from rewardfleet.services.client._progress import progress_bar
from rewardfleet.services.client._retry import RETRYABLE_STATUSES, RetryPolicy
from rewardfleet.services.client._transport import Transport
from rewardfleet.services.client.models import Sample, ScoreResult, sample_body
from rewardfleet.services.client.ray_discovery import is_ray_address
from rewardfleet.services.client.ray_discovery import resolve as resolve_on_ray
from rewardfleet.services.client.sessions import AsyncSession
from rewardfleet.services.common.retry_after import parse_retry_after
from rewardfleet.services.common.router_http import base_url as router_base_url

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "http://127.0.0.1:8000"


def normalize_base_url(base_url: str) -> str:
    """`"host:port"` (verl's style of address) gets `http://`; a trailing slash is dropped; `ray:[NAME]` is
    the gateway a fleet on this Ray cluster publishes (`ray_discovery.py`)."""
    if not base_url.strip():
        raise ValueError("base_url is empty")
    if is_ray_address(base_url):
        base_url = resolve_on_ray(base_url)
    return router_base_url(base_url)  # the one normalisation, shared with the reward functions


class AsyncRewardClient:
    """Talks to one gateway. Create it, use it from one event loop, close it (or use `async with`).

    `timeout_s` bounds each HTTP attempt (connect + send + wait + read); `max_concurrency` bounds the attempts
    in flight across all callers of this client; the connection pool is sized to match unless
    `max_connections` says otherwise. `api_key` is sent as `Authorization: Bearer <key>` (for a gateway
    started with `api_keys`).
    """

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
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        # `ray:[NAME]`: scoring posts go round the gateways the fleet publishes now (`_gateway`).
        self._ray_address = base_url.strip() if is_ray_address(base_url) else None
        self.base_url = normalize_base_url(base_url)
        self.timeout_s = timeout_s
        self.max_concurrency = max_concurrency
        self.max_connections = max_connections or max_concurrency
        self.retry = retry or RetryPolicy()
        self._headers = dict(headers or {})
        if api_key:  # sent as a header on every request; never logged
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._transport = Transport(self.base_url, self.max_connections, self._headers)  # checks the URL
        self._transports = {self.base_url: self._transport}
        self._turn = 0
        self._asking: asyncio.Future[list[str]] | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the first use; the only one
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------------

    async def __aenter__(self) -> AsyncRewardClient:
        self._ensure_session()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        for transport in self._transports.values():
            transport.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def _ensure_session(self) -> tuple[Transport, asyncio.Semaphore]:
        if self._closed:
            raise RuntimeError("AsyncRewardClient is closed")
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        elif loop is not self._loop:
            # Connections belong to the loop that made them; sharing them across loops corrupts them.
            raise RuntimeError("AsyncRewardClient used from a second event loop; create one client per loop")
        if self._semaphore is None:
            raise RuntimeError("AsyncRewardClient has a session without a semaphore")
        return self._transport, self._semaphore

    # -- scoring ---------------------------------------------------------------------------------------

    async def score(
        self,
        sample: Sample | Mapping[str, Any] | None = None,
        /,
        *,
        timeout_s: float | None = None,
        **fields: Any,
    ) -> ScoreResult:
        """Score one sample (a `Sample`, a dict in `/score`'s shape, or keyword fields).

        Raises `GatewayUnavailable` when retries run out and `GatewayHTTPError` (422/404/413/...) otherwise;
        a failing reward function is a result with `status` "error"/"timeout", not an exception.
        """
        if sample is None:
            sample = fields
        elif fields:
            sample = {**(sample.to_json() if isinstance(sample, Sample) else sample), **fields}
        return await self._score_body(sample_body(sample), timeout_s)

    async def score_many(
        self,
        samples: Iterable[Sample | Mapping[str, Any]],
        *,
        progress: bool = False,
        timeout_s: float | None = None,
    ) -> list[ScoreResult]:
        """Score samples concurrently (one `POST /score` each, at most `max_concurrency` at once).

        Returns one result per sample, in input order. A sample the client could not get scored (retries
        exhausted, or a 4xx) does not abort the others: its result has `status` "error", `score` None and
        `error.type` naming the exception (`GatewayUnavailable`, `BadRequest`, ...).
        """
        bodies = [sample_body(s) for s in samples]
        with progress_bar(len(bodies), progress) as advance:

            async def one(body: dict[str, Any]) -> ScoreResult:
                try:
                    return await self._score_body(body, timeout_s)
                except RewardFleetError as exc:
                    logger.warning("sample %s not scored: %s", body["uid"], exc)
                    return ScoreResult.client_failure(body["uid"], exc)
                finally:
                    advance()

            return list(await asyncio.gather(*(one(body) for body in bodies)))

    async def score_batch(
        self, samples: Iterable[Sample | Mapping[str, Any]], *, timeout_s: float | None = None
    ) -> list[ScoreResult]:
        """Score samples in one `POST /score/batch`; results in input order.

        One HTTP round trip for the whole list, so per-request costs (connection, headers, JSON framing) are
        paid once: the way to send a trainer step's cheap rule-based rewards. The gateway refuses more than
        its `max_batch_samples` (413). Retried like `score`, every sample keeping its `uid`; raises
        `GatewayUnavailable` / `GatewayHTTPError` for the whole batch (nothing partial comes back).
        """
        bodies = [sample_body(s) for s in samples]
        if not bodies:
            return []
        data, attempts = await self._request("POST", "/score/batch", {"samples": bodies}, timeout_s)
        results = data.get("results") if isinstance(data, Mapping) else None
        if not isinstance(results, list) or len(results) != len(bodies):
            raise GatewayHTTPError(
                200, "bad_response", f"expected {len(bodies)} results, got {str(data)[:200]}"
            )
        return [
            ScoreResult.from_json(
                item if isinstance(item, Mapping) else {}, uid=body["uid"], attempts=attempts
            )
            for item, body in zip(results, bodies, strict=True)
        ]

    async def _score_body(self, body: dict[str, Any], timeout_s: float | None) -> ScoreResult:
        data, attempts = await self._request("POST", "/score", body, timeout_s)
        if not isinstance(data, Mapping):
            raise GatewayHTTPError(200, "bad_response", f"expected a JSON object, got {type(data).__name__}")
        return ScoreResult.from_json(data, uid=body["uid"], attempts=attempts)

    # -- other endpoints -------------------------------------------------------------------------------

    async def health(self) -> bool:
        """True if `GET /health` answers 200 right now (one attempt, no retries)."""
        return await self._probe("/health")

    async def ready(self) -> bool:
        """True if `GET /ready` answers 200 right now (one attempt, no retries)."""
        return await self._probe("/ready")

    async def reward_fns(self) -> Any:
        """`GET /reward_fns`, decoded."""
        data, _ = await self._request("GET", "/reward_fns", None, None)
        return data

    # -- environments ----------------------------------------------------------------------------------

    async def environments(self) -> list[dict[str, Any]]:
        """`GET /environments`: each served environment's name and tools (name, description, input_schema)."""
        data, _ = await self._request("GET", "/environments", None, None)
        return list(data["environments"])

    def session(self, env: str, task: Mapping[str, Any] | None = None, /, **fields: Any) -> AsyncSession:
        """A session of environment `env` seeded from `task` (or keyword fields), opened on `async with`
        and closed on leaving it: `async with client.session("counter", {"initial_count": 3}) as s:`."""
        return AsyncSession(self, env, {**(task or {}), **fields})

    async def _probe(self, path: str) -> bool:
        session, _ = self._ensure_session()
        try:
            async with asyncio.timeout(self.timeout_s):
                answer = await session.request("GET", path, None)
        except OSError:  # refused, reset, lost; a timeout too (TimeoutError is an OSError)
            return False
        return answer.status == 200

    async def _gateway(self, failed: set[str]) -> tuple[str, Transport]:
        """The next of the gateways a fleet on Ray publishes (the list cached `ray_discovery.CACHE_S`), not
        one that failed this request while there is another: a gateway scaled away or lost is left at the
        next retry, and one added gets its share within `CACHE_S`."""
        address = self._ray_address or ""
        urls = ray_discovery.cached_urls(address)
        if urls is None:
            if self._asking is None or self._asking.done():  # one question to Ray for all posts waiting
                self._asking = asyncio.ensure_future(asyncio.to_thread(ray_discovery.gateway_urls, address))
            try:
                urls = await asyncio.shield(self._asking)
            except ray_discovery.GatewayNotOnRay as exc:
                logger.debug("%s: %s; staying with %s", address, exc, self.base_url)
                urls = [self.base_url]
        urls = [router_base_url(u) for u in urls]
        self._turn += 1
        turn = [urls[(self._turn + k) % len(urls)] for k in range(len(urls))]
        url = next((u for u in turn if u not in failed), turn[0])
        transport = self._transports.get(url)
        if transport is None:
            transport = self._transports[url] = Transport(url, self.max_connections, self._headers)
        self.base_url = url
        return url, transport

    # -- the one retry loop ----------------------------------------------------------------------------

    async def _request(
        self, method: str, path: str, body: Any, timeout_s: float | None, resend: bool = True
    ) -> tuple[Any, int]:
        """Send until a definitive answer; return (decoded JSON, attempts). Only transient failures retry;
        with `resend=False` (a call that is not safe to repeat: an environment's tool) a request that may have
        reached the gateway (a timeout, a connection lost) is not sent again: GatewayUnavailable at once."""
        session, semaphore = self._ensure_session()
        policy = self.retry
        loop = asyncio.get_running_loop()
        started = loop.time()
        url = self.base_url + path  # as the messages show it
        rotate = self._ray_address is not None and path.startswith("/score")
        at, failed = self.base_url, set[str]() if rotate else None
        limit_s = timeout_s or self.timeout_s
        # Encoded once for every attempt, in C: the stdlib encoder costs ~7 ms per MB of body on the
        # caller's event loop (a 1024-sample batch of 4096-token responses is ~15 MB).
        data = None if body is None else encode_json(body)
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            last_status: int | None = None
            if failed is not None:
                at, session = await self._gateway(failed)
                url = at + path
            async with semaphore:
                try:
                    async with asyncio.timeout(limit_s):  # connect + send + wait + read
                        answer = await session.request(method, path, data)
                    if answer.status == 200:
                        return _decode(answer.body, answer.status), attempt
                    if answer.status not in RETRYABLE_STATUSES:
                        raise http_error(answer.status, _decode_lenient(answer.body))
                    last_status = answer.status
                    retry_after = parse_retry_after(answer.headers.get("retry-after"))
                    cause = f"HTTP {answer.status}"
                except TimeoutError as exc:
                    if not policy.retry_on_timeout or not resend:
                        raise GatewayUnavailable(
                            f"{method} {url}: no answer within {limit_s}s", attempts=attempt
                        ) from exc
                    cause = f"timeout after {limit_s}s"
                except OSError as exc:
                    # Refused, reset, closed mid-answer (e.g. the gateway restarted; `ConnectionLost`): safe
                    # to send again, the uid lets the gateway recognise the repeat.
                    if not resend:
                        raise GatewayUnavailable(
                            f"{method} {url}: {type(exc).__name__}: {exc} (not sent again)", attempts=attempt
                        ) from exc
                    cause = f"{type(exc).__name__}: {exc}"
            if failed is not None:
                failed.add(at)
            elapsed = loop.time() - started
            delay = policy.delay_s(attempt - 1, retry_after)
            if attempt >= policy.max_attempts or elapsed + delay > policy.max_elapsed_s:
                raise GatewayUnavailable(
                    f"{method} {url}: gave up after {attempt} attempts in {elapsed:.1f}s (last: {cause})",
                    attempts=attempt,
                    last_status=last_status,
                )
            logger.debug("%s %s: %s; retry %d in %.2fs", method, url, cause, attempt, delay)
            await asyncio.sleep(delay)


def encode_json(body: Any) -> bytes:
    """A request body as JSON, the bytes' meaning exactly `json.dumps`'s. orjson first (dict keys that are
    not strings become strings, as `json.dumps` makes them); a body holding NaN or an infinity (orjson would
    write null; `json.dumps` writes `NaN`, which the gateway reads back as NaN) and what orjson refuses (an
    integer beyond 64 bits) go to `json.dumps`, which encodes them or raises the `TypeError` callers always
    got. The check for NaN visits each value once and never reads a string."""
    if not _has_non_finite(body):
        try:
            return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:
            pass
    return json.dumps(body).encode()


def _has_non_finite(value: Any) -> bool:
    if not isinstance(value, dict | list | tuple):
        return isinstance(value, float) and not math.isfinite(value)
    stack = [value]
    while stack:
        node = stack.pop()
        for child in node.values() if isinstance(node, dict) else node:
            if type(child) is float:
                if not math.isfinite(child):
                    return True
            elif isinstance(child, dict | list | tuple):
                stack.append(child)
            elif isinstance(child, float) and not math.isfinite(child):
                return True
    return False


def _decode(raw: bytes, status: int) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise GatewayHTTPError(status, "bad_response", f"answer is not JSON: {raw[:200]!r}") from exc


def _decode_lenient(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")
