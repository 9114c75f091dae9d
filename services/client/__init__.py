"""Python client of the reward gateway. Light on purpose: httptools, orjson, yarl and the standard library.

    from rewardfleet.services.client import AsyncRewardClient, RewardClient

    async with AsyncRewardClient("http://127.0.0.1:8000") as client:
        results = await client.score_many(samples)          # in input order, one per sample

Environment sessions: `with client.session(env, task) as s: s.call(tool, **args); s.verify(...)`
(`sessions` holds `AsyncSession`; `sync_client.Session` is its blocking twin).

`async_client` (`AsyncRewardClient`) and `sync_client` (`RewardClient`) over `_transport` (keep-alive
HTTP/1.1, httptools) and `_retry` (`RetryPolicy`); `models` types samples and results; `_exceptions` holds
the one exception tree; `_progress` the optional progress bar; `ray_discovery` resolves the address
`ray:[NAME]` (the gateway a fleet placed by `rewardfleet up --ray` publishes on this process's Ray cluster).
Nothing here imports fastapi, torch, ray or the gateway, so trainers can import it cheaply.
"""

from rewardfleet.services.client._exceptions import (
    BadRequest,
    GatewayHTTPError,
    GatewayUnavailable,
    PayloadTooLarge,
    RewardFleetError,
    SessionNotFound,
    Unauthorized,
    UnknownRewardFunction,
)
from rewardfleet.services.client._retry import RetryPolicy
from rewardfleet.services.client.async_client import DEFAULT_BASE_URL, AsyncRewardClient
from rewardfleet.services.client.models import ErrorInfo, Sample, ScoreResult, Status, new_uid
from rewardfleet.services.client.sessions import AsyncSession, SessionVerdict, ToolCallError
from rewardfleet.services.client.sync_client import RewardClient, Session

__all__ = [
    "DEFAULT_BASE_URL",
    "AsyncRewardClient",
    "AsyncSession",
    "BadRequest",
    "ErrorInfo",
    "GatewayHTTPError",
    "GatewayUnavailable",
    "PayloadTooLarge",
    "RetryPolicy",
    "RewardClient",
    "RewardFleetError",
    "Sample",
    "ScoreResult",
    "Session",
    "SessionNotFound",
    "SessionVerdict",
    "Status",
    "ToolCallError",
    "Unauthorized",
    "UnknownRewardFunction",
    "new_uid",
]
