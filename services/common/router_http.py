"""POST JSON to an sglang-router (or, for routes the router does not proxy, a model server) and get JSON back.

Public: a reward function of your own that calls a model pool should use it too
(`from rewardfleet.services.common.router_http import RemoteCallError, post_json, resolve_address`), so its
failures reach the gateway as the same typed errors. `base_url` and `server_message` are public as well.

One helper, used by every reward function here that calls a model pool. It does *not* retry HTTP errors: the
router already runs the one retry loop of that hop (with backoff, on 408/429/5xx), so a second loop here would
multiply attempts, and a 4xx is the caller's mistake that no retry fixes. The single exception is a refused
connection, retried once after a short pause: nothing was sent, so it is safe, and it rides over a router
that is restarting. Everything that goes wrong raises `RemoteCallError` (or the subclass the caller names),
carrying the URL, the HTTP status and the response body, so the gateway reports a typed error instead of
a score of 0. The secret of a gateway's forwarding address (`/pools/<token>/...`, an external pool) never
appears in that error: `redact_pool_tokens` masks it in the message and the URL.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from typing import Any

import aiohttp

DEFAULT_TIMEOUT_S = 60.0
CONNECT_RETRY_PAUSE_S = 0.2
_MAX_BODY_CHARS = 2000
# The gateway's forwarding addresses carry a secret path segment: host:port/pools/<token>/<pool>/<function>.
_POOL_TOKEN_RE = re.compile(r"/pools/[^/\s'\"?#]+/")
POOL_TOKEN_MASK = "/pools/<token>/"


def redact_pool_tokens(text: str) -> str:
    """`text` with the secret segment of every gateway forwarding address masked (`/pools/<token>/`)."""
    return _POOL_TOKEN_RE.sub(POOL_TOKEN_MASK, text)


class RemoteCallError(Exception):
    """A call to a router or model server failed.

    `kind` says how: "http_status" (non-2xx answer; `status` and `body` hold it), "connect" (nobody
    listening), "timeout", "transport" (connection dropped mid-request) or "bad_response" (2xx but not the
    JSON expected).
    """

    def __init__(
        self, message: str, *, url: str, kind: str, status: int | None = None, body: str = ""
    ) -> None:
        super().__init__(redact_pool_tokens(message))
        self.url = redact_pool_tokens(url)
        self.kind = kind
        self.status = status
        self.body = redact_pool_tokens(body)
        self.server_message = server_message(body)


def server_message(body: str) -> str | None:
    """The message inside an SGLang error body, or None if the body is not one.

    SGLang 0.5.23 answers a 4xx in three shapes (tests/sglang_conformance/test_native_errors.py checks them
    against its source): `ErrorResponse` `{"object": "error", "message", ...}` (request validation, any
    route; every /v1/* error), `{"error": "<text>"}` (/generate's JSON-contract gate) and
    `{"error": {"message"}}` (a ValueError in a native handler; also the gateway's own envelope)."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("message"), str):
        return str(data["message"])
    error = data.get("error")
    if isinstance(error, str):
        return error
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return None


def resolve_address(
    pool: str | None,
    router_addresses: Mapping[str, str] | None,
    reward_router_address: str | None,
) -> str:
    """The `host:port` of pool `pool`, falling back to the default router when the pool is not configured."""
    if pool and router_addresses and router_addresses.get(pool):
        return router_addresses[pool]
    if reward_router_address:
        return reward_router_address
    known = sorted(router_addresses or {})
    raise ValueError(
        f"no router address for pool {pool!r}: router_addresses has {known}, reward_router_address is unset"
    )


def base_url(address: str) -> str:
    """`host:port` (verl's form) or a full `http://host:port` URL, without a trailing slash."""
    address = address.strip().rstrip("/")
    if "://" not in address:
        address = f"http://{address}"
    return address


async def post_json(
    session: aiohttp.ClientSession | None,
    address: str,
    path: str,
    payload: Mapping[str, Any],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    error_cls: type[RemoteCallError] = RemoteCallError,
    headers: Mapping[str, str] | None = None,
) -> Any:
    """POST `payload` to `address` + `path` and return the decoded JSON body of a 2xx answer.

    `session` is the gateway's shared client; with None a session is opened for this one call (for callers
    outside the gateway, e.g. verl running the function itself).
    """
    url = base_url(address) + path
    if session is None:
        async with aiohttp.ClientSession() as own_session:
            return await _post(own_session, url, payload, timeout_s, error_cls, headers)
    return await _post(session, url, payload, timeout_s, error_cls, headers)


async def _post(
    session: aiohttp.ClientSession,
    url: str,
    payload: Mapping[str, Any],
    timeout_s: float,
    error_cls: type[RemoteCallError],
    headers: Mapping[str, str] | None = None,
) -> Any:
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    for attempt in (1, 2):
        try:
            async with session.post(url, json=payload, timeout=timeout, headers=headers) as resp:
                text = await resp.text(errors="replace")
                status = resp.status
            break
        except aiohttp.ClientConnectorError as exc:
            if attempt == 1:
                await asyncio.sleep(CONNECT_RETRY_PAUSE_S)
                continue
            raise error_cls(f"cannot connect to {url}: {exc}", url=url, kind="connect") from exc
        except TimeoutError as exc:
            raise error_cls(f"no answer from {url} within {timeout_s:g}s", url=url, kind="timeout") from exc
        except aiohttp.ClientError as exc:
            raise error_cls(f"request to {url} failed: {exc!r}", url=url, kind="transport") from exc
    body = text[:_MAX_BODY_CHARS]
    if not 200 <= status < 300:
        # The server's own words when the body is an SGLang error, else the body as it came.
        said = server_message(text)
        raise error_cls(
            f"HTTP {status} from {url}: {(said[:_MAX_BODY_CHARS] if said else body) or '(empty body)'}",
            url=url,
            kind="http_status",
            status=status,
            body=body,
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error_cls(
            f"HTTP {status} from {url} is not JSON: {body!r}",
            url=url,
            kind="bad_response",
            status=status,
            body=body,
        ) from exc
